import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { parseServerEvent, type SocketLike, StepwiseSocket } from '../../frontend/src/lib/socket-client.ts';

interface Connection {
  url: URL;
  socket: WebSocket;
  received: unknown[];
}

let server: WebSocketServer;
let connections: Connection[];
let url: string;

const session = (id: string) => ({
  type: 'session',
  session_id: id,
  protocol: 1,
  model: 'm',
  limits: { max_steps_default: 10, max_steps_limit: 50 },
  tools: [],
});

beforeEach(async () => {
  connections = [];
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
  server.on('connection', (socket, request) => {
    const connection: Connection = { url: new URL(request.url!, 'ws://host'), socket, received: [] };
    socket.on('message', (data) => connection.received.push(JSON.parse(data.toString())));
    connections.push(connection);
    socket.send(JSON.stringify(session('s-1')));
  });
});

afterEach(async () => {
  for (const client of server.clients) client.terminate();
  await new Promise((resolve) => server.close(resolve));
});

function client(options: Partial<ConstructorParameters<typeof StepwiseSocket>[0]> = {}) {
  const socket = new StepwiseSocket({
    url,
    createSocket: (target) => new WebSocket(target) as unknown as SocketLike,
    backoff: { initialMs: 10, maxMs: 40 },
    random: () => 1,
    ...options,
  });
  const events: { type: string; seq?: number }[] = [];
  const states: string[] = [];
  socket.onEvent((event) => events.push(event as { type: string }));
  socket.onState((state) => states.push(state));
  return { socket, events, states };
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('the web app socket client', () => {
  it('goes live on the session message and sends messages', async () => {
    const { socket, events, states } = client();
    expect(socket.state).toBe('connecting');
    expect(socket.send({ type: 'agent_control', action: 'stop' })).toBe(false);
    socket.connect();
    await until(() => socket.state === 'live');
    expect(states).toEqual(['live']);
    expect(events[0]).toMatchObject({ type: 'session', session_id: 's-1' });
    expect(socket.sessionId).toBe('s-1');
    expect(socket.send({ type: 'chat', content: 'hi' })).toBe(true);
    await until(() => connections[0]!.received.length === 1);
    expect(connections[0]!.received[0]).toEqual({ type: 'chat', content: 'hi' });
    socket.close();
  });

  it('reconnects after a drop and rejoins the session after the last seq it saw', async () => {
    const { socket, events, states } = client();
    socket.connect();
    await until(() => socket.state === 'live');
    const first = connections[0]!;
    first.socket.send(JSON.stringify({ type: 'response_complete', seq: 7, ts: '2026-01-01T00:00:00.000Z' }));
    await until(() => events.some((event) => event.seq === 7));
    first.socket.terminate();
    await until(() => connections.length === 2 && socket.state === 'live');
    expect(states).toEqual(['live', 'reconnecting', 'live']);
    expect(connections[1]!.url.searchParams.get('session_id')).toBe('s-1');
    expect(connections[1]!.url.searchParams.get('after_seq')).toBe('7');
    socket.close();
  });

  it('keeps retrying while the server is away, and rejoins when it is back', async () => {
    let attempts = 0;
    const { socket } = client({
      createSocket: (target) => {
        attempts++;
        return new WebSocket(target) as unknown as SocketLike;
      },
    });
    socket.connect();
    await until(() => socket.state === 'live');
    const port = (server.address() as AddressInfo).port;
    for (const connection of connections) connection.socket.terminate();
    await new Promise((resolve) => server.close(resolve));
    // Several attempts fail while the server is away, and the client keeps at it.
    await until(() => attempts >= 4);
    expect(socket.state).toBe('reconnecting');
    // Bring the server back on the same port: the client finds it by itself.
    server = new WebSocketServer({ host: '127.0.0.1', port });
    server.on('connection', (ws) => ws.send(JSON.stringify(session('s-1'))));
    await until(() => socket.state === 'live');
    socket.close();
  });

  it('stays closed after close()', async () => {
    const { socket } = client();
    socket.connect();
    await until(() => socket.state === 'live');
    socket.close();
    // The server sees the socket close; a client that meant to reconnect would have done so within
    // its longest backoff (40 ms here), so nothing arriving for twice that long is the evidence.
    await until(() => connections[0]!.socket.readyState === WebSocket.CLOSED);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(connections).toHaveLength(1);
  });

  it('passes unknown event types on by type and drops frames that are not JSON', () => {
    expect(parseServerEvent('{"type":"from_the_future","x":1}')).toEqual({ type: 'from_the_future' });
    expect(parseServerEvent('not json')).toBeUndefined();
    expect(parseServerEvent('[1]')).toBeUndefined();
    expect(parseServerEvent(new Uint8Array([1]))).toBeUndefined();
    expect(parseServerEvent(JSON.stringify({ type: 'error', code: 'x', message: 'y' }))).toEqual({ type: 'error', code: 'x', message: 'y' });
  });
});
