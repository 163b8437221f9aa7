import type { FastifyReply, FastifyRequest } from 'fastify';

/** Counts open sockets per client address and refuses upgrades beyond the limit (HTTP 429). */
export class SocketsPerAddress {
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: number) {}

  /** Open sockets, from every address. */
  get total(): number {
    let total = 0;
    for (const count of this.open.values()) total += count;
    return total;
  }

  /** An onRequest hook for the upgrade route. */
  readonly check = async (request: FastifyRequest, reply: FastifyReply) => {
    if ((this.open.get(request.ip) ?? 0) >= this.limit) {
      return reply.code(429).send({ error: { code: 'too_many_connections', message: `At most ${this.limit} sockets per address` } });
    }
  };

  /** Counts a socket in; returns the function that counts it out. */
  add(address: string): () => void {
    this.open.set(address, (this.open.get(address) ?? 0) + 1);
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
    };
  }
}
