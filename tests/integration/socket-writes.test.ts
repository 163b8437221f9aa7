// What a client's TCP connection carries when the server sends several messages at once: each is a
// WebSocket frame of its own, and those sent in one turn of the event loop leave in one write (one
// system call, as few packets as fit) rather than one write per frame.
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import type { ServerEvent } from '@stepwise/shared-types';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { WebSocketConnection } from '../../backend/src/transport/websocket-connection.ts';

const LIMITS = { socketMaxBufferedBytes: 1 << 20, slowSocketTimeoutMs: 10_000 };

let server: WebSocketServer | undefined;
let client: Socket | undefined;

afterEach(async () => {
  client?.destroy();
  client = undefined;
  for (const socket of server?.clients ?? []) socket.terminate();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server whose one connection is a WebSocketConnection, and a raw TCP client that did the upgrade by hand. */
async function connected(): Promise<{
  connection: WebSocketConnection;
  writes: () => number;
  frames: () => string[];
  next: (count: number) => Promise<void>;
}> {
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server!.once('listening', () => resolve()));
  // Each time the server's TCP socket hands data to the system (a Writable's _write or _writev, as
  // stream implementers know them) is one write: what cork and uncork change.
  let writes = 0;
  const opened = new Promise<WebSocketConnection>((resolve) =>
    server!.once('connection', (socket, request) => {
      const tcp = request.socket as Socket & { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
      const write = tcp._write.bind(tcp);
      const writev = tcp._writev.bind(tcp);
      tcp._write = (...args) => {
        writes++;
        write(...args);
      };
      tcp._writev = (...args) => {
        writes++;
        writev(...args);
      };
      resolve(new WebSocketConnection(socket, LIMITS, request.socket));
    }),
  );
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1');
  client = socket;
  socket.write(
    `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  const chunks: Buffer[] = [];
  let head = Buffer.alloc(0);
  let upgraded = false;
  let waiter: { count: number; resolve: () => void } | undefined;
  const frames = () => parseFrames(Buffer.concat(chunks));
  socket.on('data', (data: Buffer) => {
    if (!upgraded) {
      // The 101 response first; anything after its blank line is frames.
      head = Buffer.concat([head, data]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      const rest = head.subarray(end + 4);
      if (rest.length > 0) chunks.push(rest);
    } else chunks.push(data);
    if (waiter && frames().length >= waiter.count) waiter.resolve();
  });
  const connection = await opened;
  const next = (count: number) =>
    new Promise<void>((resolve) => {
      waiter = { count, resolve };
      if (frames().length >= count) resolve();
    });
  return { connection, writes: () => writes, frames, next };
}

/** Unmasked text frames from the server, under 64 KiB each (a 7- or 16-bit length). */
function parseFrames(bytes: Buffer): string[] {
  const texts: string[] = [];
  let at = 0;
  while (at + 4 <= bytes.length) {
    const short = bytes[at + 1]! & 0x7f;
    const [length, header] = short === 126 ? [bytes.readUInt16BE(at + 2), 4] : [short, 2];
    if (at + header + length > bytes.length) break;
    expect(bytes[at]).toBe(0x81);
    texts.push(bytes.subarray(at + header, at + header + length).toString('utf8'));
    at += header + length;
  }
  return texts;
}

const event = (n: number, pad = '') => ({ type: 'agent_reason', n, pad }) as unknown as ServerEvent;

describe('messages sent together to one client', () => {
  it('leave in one write, each a frame of its own, and later ones still go out', async () => {
    const { connection, writes, frames, next } = await connected();
    connection.send(event(1));
    connection.send(event(2));
    connection.send(event(3));
    await next(3);
    expect(frames().map((text) => JSON.parse(text).n)).toEqual([1, 2, 3]);
    expect(writes()).toBe(1);

    // The socket is uncorked after that turn: a message sent on its own, later, arrives too.
    await new Promise((resolve) => setImmediate(resolve));
    connection.send(event(4));
    await next(4);
    expect(frames().map((text) => JSON.parse(text).n)).toEqual([1, 2, 3, 4]);
    expect(writes()).toBe(2);
  });

  it('sent from promise jobs of one turn also leave together', async () => {
    const { connection, writes, frames, next } = await connected();
    await Promise.resolve().then(async () => {
      connection.send(event(1));
      await Promise.resolve();
      connection.send(event(2));
    });
    await next(2);
    expect(frames().map((text) => JSON.parse(text).n)).toEqual([1, 2]);
    expect(writes()).toBe(1);
  });

  it('hold back at most 16 KiB of a turn: a larger one goes out as it is sent, and the client is not taken for slow', async () => {
    const { connection, writes, frames, next } = await connected();
    for (let n = 1; n <= 6; n++) connection.send(event(n, 'y'.repeat(10_000)));
    // Still in the turn that sent them: some have gone to the system already.
    expect(writes()).toBeGreaterThanOrEqual(1);
    expect(connection.congested).toBe(false);
    await next(6);
    expect(frames().map((text) => JSON.parse(text).n)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
