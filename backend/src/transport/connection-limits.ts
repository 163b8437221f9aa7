import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Whose share of the per-client limits the request takes (see `clientOf`): `user:ID` when users
     * sign in and the request names one, else `address:IP`. Set right after the access check.
     */
    client: string;
  }
}

/**
 * Whose share of a limit (sockets, runs, REST requests) a request takes. When users sign in
 * (AUTH_MODE header or oidc) every user may come through one proxy's address, so a user's share is
 * their own; before sign-in, and when nobody signs in (none, token: one user), it is the address's.
 */
export function clientOf(request: Pick<FastifyRequest, 'ip' | 'user'>, config: Config): string {
  const signedIn = config.auth.mode === 'header' || config.auth.mode === 'oidc';
  return signedIn && request.user ? `user:${request.user.id}` : `address:${request.ip}`;
}

/** Counts open sockets per client (user or address, see `clientOf`) and refuses upgrades beyond the limit (HTTP 429). */
export class SocketsPerClient {
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Open sockets, from every client. */
  get total(): number {
    let total = 0;
    for (const count of this.open.values()) total += count;
    return total;
  }

  /** An onRequest hook for the upgrade route. */
  readonly check = async (request: FastifyRequest, reply: FastifyReply) => {
    if ((this.open.get(request.client) ?? 0) >= this.limit) {
      const per = request.client.startsWith('user:') ? 'user' : 'address';
      return reply.code(429).send({ error: { code: 'too_many_connections', message: `At most ${this.limit} sockets per ${per} (MAX_SOCKETS_PER_ADDRESS)` } });
    }
  };

  /** Counts a socket of `client` in; returns the function that counts it out. */
  add(client: string): () => void {
    this.open.set(client, (this.open.get(client) ?? 0) + 1);
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      const left = (this.open.get(client) ?? 1) - 1;
      if (left > 0) this.open.set(client, left);
      else this.open.delete(client);
    };
  }
}

/**
 * Caps the TCP connections one address holds open (MAX_CONNECTIONS_PER_ADDRESS), whatever they
 * carry: requests, slow uploads, sockets. A connection over the cap is answered 429
 * `too_many_connections` at once and closed, before any of its bytes are read, so that one client
 * cannot hold every file descriptor. The addresses of trusted proxies (TRUSTED_PROXIES) are not
 * capped: everyone comes through them, and each user's share is counted once they are known.
 */
/** Connections refused over MAX_CONNECTIONS_PER_ADDRESS: no request they carry is handled. */
const refused = new WeakSet<Socket>();

/** Whether a request came on a connection refused for its address's count (its 429 is already written). */
export function refusedConnection(socket: Socket): boolean {
  return refused.has(socket);
}

export class ConnectionsPerAddress {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly uncapped: (address: string) => boolean,
  ) {}

  /** Watches the server's new connections. */
  watch(server: Server): void {
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
  }

  private admit(socket: Socket): void {
    const address = socket.remoteAddress;
    if (!address || this.uncapped(address)) return;
    const held = this.open.get(address) ?? 0;
    if (held >= this.limit) {
      const body = JSON.stringify({
        error: { code: 'too_many_connections', message: `At most ${this.limit} connections per address (MAX_CONNECTIONS_PER_ADDRESS)` },
      });
      // The HTTP server still parses what the client sent with it: the first hook drops that request (refusedConnection).
      refused.add(socket);
      socket.end(
        `HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      // A client that keeps its end open does not keep the descriptor for long.
      socket.setTimeout(1_000, () => socket.destroy());
      return;
    }
    this.open.set(address, held + 1);
    socket.once('close', () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
    });
  }
}

/** Counts what each client (see `clientOf`) has in progress, up to a limit each. */
export class InProgressPerClient {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Counts one more for `client`: the function that counts it out, or undefined when the client is at the limit. */
  tryAdd(client: string): (() => void) | undefined {
    const held = this.counts.get(client) ?? 0;
    if (held >= this.limit) return undefined;
    this.counts.set(client, held + 1);
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      const left = (this.counts.get(client) ?? 1) - 1;
      if (left > 0) this.counts.set(client, left);
      else this.counts.delete(client);
    };
  }
}
