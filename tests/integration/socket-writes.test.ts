// What a client's TCP connection carries when the server sends several messages at once: each is a
// WebSocket frame of its own, and those sent in one turn of the event loop leave in one write (one
// system call, as few packets as fit) rather than one write per frame. A run's progress sent faster
// than SOCKET_BATCH_MS goes out once per that time; what ends a run or asks a person does not wait.
import type { AddressInfo, Socket } from 'node:net';
import type { ServerEvent } from '@stepwise/shared-types';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { WebSocketConnection } from '../../backend/src/transport/websocket-connection.ts';

const LIMITS = { socketMaxBufferedBytes: 1 << 20, slowSocketTimeoutMs: 10_000, socketBatchMs: 0 };

let server: WebSocketServer | undefined;
let client: WebSocket | undefined;

afterEach(async () => {
  client?.terminate();
  client = undefined;
  for (const socket of server?.clients ?? []) socket.terminate();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server whose one connection is a WebSocketConnection, and a client that keeps every message it gets. */
async function connected(limits: typeof LIMITS = LIMITS): Promise<{
  connection: WebSocketConnection;
  writes: () => number;
  frames: () => string[];
  next: (count: number) => Promise<void>;
  closed: Promise<number>;
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
      resolve(new WebSocketConnection(socket, limits, request.socket));
    }),
  );
  const { port } = server.address() as AddressInfo;
  const received: string[] = [];
  let waiter: { count: number; resolve: () => void } | undefined;
  client = new WebSocket(`ws://127.0.0.1:${port}`);
  client.on('message', (data) => {
    received.push(data.toString());
    if (waiter && received.length >= waiter.count) waiter.resolve();
  });
  const closed = new Promise<number>((resolve) => client!.once('close', (code) => resolve(code)));
  const connection = await opened;
  const next = (count: number) =>
    new Promise<void>((resolve) => {
      waiter = { count, resolve };
      if (received.length >= count) resolve();
    });
  return { connection, writes: () => writes, frames: () => received, next, closed };
}

const event = (n: number, pad = '') => ({ type: 'agent_reason', n, pad }) as unknown as ServerEvent;
/** A run's step, which may wait for the batch. */
const progress = (n: number) => ({ type: 'agent_update', update_type: 'agent_reason', run_id: 'r1', step: n, content: '', n }) as unknown as ServerEvent;
const update = (updateType: string, n: number, runId: string | null = 'r1') =>
  ({ type: 'agent_update', update_type: updateType, ...(runId ? { run_id: runId } : {}), n }) as unknown as ServerEvent;
const turn = () => new Promise((resolve) => setImmediate(resolve));
const numbers = (frames: string[]) => frames.map((text) => JSON.parse(text).n);

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

describe('a run progressing faster than SOCKET_BATCH_MS', () => {
  // A batch time no test waits for: only what may not wait lets held steps out.
  const HOLD = { ...LIMITS, socketBatchMs: 600_000 };

  it('sends its first step at once and holds the next ones, in later turns, for the batch', async () => {
    const { connection, writes, frames, next } = await connected(HOLD);
    connection.send(progress(1));
    await next(1);
    expect(writes()).toBe(1);
    for (let n = 2; n <= 4; n++) {
      await turn();
      connection.send(progress(n));
    }
    await turn();
    await turn();
    expect(writes()).toBe(1);
    expect(numbers(frames())).toEqual([1]);
    connection.send({ type: 'response_complete', run_id: 'r1', seq: 5, ts: '', n: 5 } as unknown as ServerEvent);
    await next(5);
    expect(numbers(frames())).toEqual([1, 2, 3, 4, 5]);
    expect(writes()).toBe(2);
  });

  it('sends the held steps when the batch time is up, in order', async () => {
    const { connection, frames, next } = await connected({ ...LIMITS, socketBatchMs: 20 });
    for (let n = 1; n <= 4; n++) {
      connection.send(progress(n));
      await turn();
    }
    await next(4);
    expect(numbers(frames())).toEqual([1, 2, 3, 4]);
  });

  for (const ending of ['agent_completion', 'agent_stopped', 'agent_error', 'agent_request_input', 'agent_request_input_timeout', 'agent_input_received']) {
    it(`sends ${ending} at once, with the steps held before it`, async () => {
      const { connection, writes, frames, next } = await connected(HOLD);
      connection.send(progress(1));
      await next(1);
      await turn();
      connection.send(progress(2));
      await turn();
      connection.send(update(ending, 3));
      await next(3);
      expect(numbers(frames())).toEqual([1, 2, 3]);
      expect(writes()).toBe(2);
    });
  }

  it('sends at once what belongs to no run (an answer to a command, plain chat)', async () => {
    const { connection, frames, next } = await connected(HOLD);
    connection.send(progress(1));
    await next(1);
    await turn();
    connection.send(update('agent_todos', 2, null));
    await next(2);
    connection.send({ type: 'assistant_delta', delta: 'a', n: 3 } as unknown as ServerEvent);
    await next(3);
    expect(numbers(frames())).toEqual([1, 2, 3]);
  });

  it('sends the held steps before its close frame when the server closes the socket', async () => {
    const { connection, frames, closed } = await connected(HOLD);
    connection.send(progress(1));
    await turn();
    connection.send(progress(2));
    connection.close(1000, 'done');
    expect(await closed).toBe(1000);
    expect(numbers(frames())).toEqual([1, 2]);
  });

  it('leaves nothing held when a message cannot be encoded: a close the socket sends itself still goes out', async () => {
    const { connection, closed } = await connected(HOLD);
    const circular: Record<string, unknown> = { type: 'agent_update', update_type: 'agent_reason', run_id: 'r1' };
    circular.self = circular;
    expect(() => connection.send(circular as unknown as ServerEvent)).toThrow();
    // As the server's shutdown does: ws's own close, not the connection's.
    for (const socket of server!.clients) socket.close(1001, 'Server shutting down');
    expect(await closed).toBe(1001);
  });

  it('with SOCKET_BATCH_MS=0 sends the steps of each turn at the end of that turn', async () => {
    const { connection, writes, frames, next } = await connected({ ...LIMITS, socketBatchMs: 0 });
    for (let n = 1; n <= 3; n++) {
      connection.send(progress(n));
      await next(n);
    }
    expect(numbers(frames())).toEqual([1, 2, 3]);
    expect(writes()).toBe(3);
  });
});
