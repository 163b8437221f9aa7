import { randomUUID } from 'node:crypto';
import { MemoryStore } from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

/** A memory store that records how the event log is read. */
class RecordingStore extends MemoryStore {
  readonly listCalls: { sessionId: string; afterSeq: number; limit: number | undefined }[] = [];

  override listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]> {
    this.listCalls.push({ sessionId, afterSeq, limit });
    return super.listEvents(sessionId, afterSeq, limit);
  }
}

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  // Paused clients never finish a closing handshake: cut them all off, then stop the servers.
  for (const client of clients.splice(0)) client.socket.terminate();
  try {
    await server?.close();
  } finally {
    server = undefined;
    await llm?.close();
    llm = undefined;
  }
});

/** Starts Stepwise on the scripted model; every chat is answered with `answerChars` characters, streamed. */
async function start(env: Record<string, string>, options: { answerChars?: number; store?: MemoryStore } = {}): Promise<TestServer> {
  llm = await ScriptedLlmServer.start();
  const answerChars = options.answerChars ?? 64 * 1024;
  // Eight previews per answer, then the answer itself.
  llm.respond(() => ({ text: 'x'.repeat(answerChars), chunkChars: Math.ceil(answerChars / 8) }));
  server = await startStepwise(
    {
      LLM_PROVIDER: 'openai',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'test-key',
      LLM_MAX_OUTPUT_CHARS: String(answerChars + 1000),
      MAX_MESSAGES_PER_SECOND: '1000',
      ...env,
    },
    undefined,
    options.store ?? new MemoryStore(),
  );
  return server;
}

async function connect(query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl, query);
  clients.push(client);
  return client;
}

/** The server's side of every open socket. */
function serverSockets(): WebSocket[] {
  return [...server!.app.websocketServer.clients];
}

/** Waits for a condition of the server's state that no client message announces; polls it. */
async function eventually(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends plain chats one after another, each answered in full, until `done` (at most `max` chats). */
async function chatUntil(client: TestClient, done: () => boolean, max = 200): Promise<void> {
  for (let index = 0; index < max && !done(); index++) {
    const from = client.events.length;
    client.chat(`Tell me something long (${index})`);
    await client.untilComplete({ from, timeoutMs: 30_000 });
  }
}

const seqs = (client: TestClient): number[] => client.logged.map((event) => Number(event.seq));
const range = (first: number, last: number): number[] => Array.from({ length: Math.max(0, last - first + 1) }, (_, index) => first + index);
const lastSeq = (client: TestClient): number => Number(client.logged.at(-1)?.seq ?? 0);
const deltas = (events: readonly Record<string, unknown>[]) => events.filter((event) => event.type === 'assistant_delta').length;

/** A stored session whose log holds `count` assistant messages of `contentChars` characters each. */
async function storedSession(store: MemoryStore, count: number, contentChars: number): Promise<{ id: string; events: LoggedEvent[] }> {
  const id = randomUUID();
  await store.createSession(id);
  const events: LoggedEvent[] = [];
  for (let seq = 1; seq <= count; seq++) {
    const event = { type: 'assistant_message', content: `${seq} `.padEnd(contentChars, 'y'), seq, ts: new Date().toISOString() } as LoggedEvent;
    await store.appendEvent(id, event);
    events.push(event);
  }
  return { id, events };
}

describe('slow sockets', () => {
  it('closes a socket that stays behind for the slow-socket timeout with 1013; a reading socket gets every event, and a rejoin what it missed', async () => {
    const limit = 256 * 1024;
    await start({ SOCKET_MAX_BUFFERED_BYTES: String(limit), SOCKET_SLOW_TIMEOUT_MS: '200' });
    const reader = await connect();
    const sessionId = String(reader.session.session_id);
    const slow = await connect({ session_id: sessionId });
    slow.socket.pause();

    // Answers are small next to the limit, and the chats stop as soon as the slow socket is over
    // it: it never gets twice as far behind, so only the timeout can close it.
    await chatUntil(reader, () => serverSockets().some((socket) => socket.bufferedAmount > limit || socket.readyState === WebSocket.CLOSING));
    await eventually(() => serverSockets().some((socket) => socket.readyState === WebSocket.CLOSING), 'the server to close the slow socket');
    await chatUntil(reader, () => false, 1); // the closed socket misses this one
    expect(seqs(reader)).toEqual(range(1, lastSeq(reader)));

    slow.socket.resume();
    expect(await slow.closed()).toBe(1013);
    // What the slow socket got is the start of the log, without a hole, each event once.
    const missedAfter = lastSeq(slow);
    expect(seqs(slow)).toEqual(range(1, missedAfter));
    expect(missedAfter).toBeLessThan(lastSeq(reader));

    const rejoined = await connect({ session_id: sessionId, after_seq: missedAfter });
    await rejoined.waitUntil(() => (lastSeq(rejoined) >= lastSeq(reader) ? true : undefined));
    expect(seqs(rejoined)).toEqual(range(missedAfter + 1, lastSeq(reader)));
    expect([...slow.logged, ...rejoined.logged]).toEqual(reader.logged);
  });

  it('closes at once a socket that falls twice its limit behind, without waiting for the timeout', async () => {
    const limit = 64 * 1024;
    await start({ SOCKET_MAX_BUFFERED_BYTES: String(limit), SOCKET_SLOW_TIMEOUT_MS: '600000' }, { answerChars: 512 * 1024 });
    const reader = await connect();
    const sessionId = String(reader.session.session_id);
    const slow = await connect({ session_id: sessionId });
    slow.socket.pause();

    await chatUntil(reader, () => serverSockets().some((socket) => socket.readyState === WebSocket.CLOSING), 100);
    await eventually(() => serverSockets().some((socket) => socket.readyState === WebSocket.CLOSING), 'the server to close the slow socket');
    // The slow socket never held more than about twice the limit plus one answer.
    const behind = serverSockets().find((socket) => socket.readyState === WebSocket.CLOSING)!;
    expect(behind.bufferedAmount).toBeLessThan(2 * limit + 2 * 512 * 1024);

    await chatUntil(reader, () => false, 1); // the closed socket misses this one

    slow.socket.resume();
    expect(await slow.closed()).toBe(1013);
    expect(seqs(slow)).toEqual(range(1, lastSeq(slow)));
    expect(seqs(reader)).toEqual(range(1, lastSeq(reader)));
    expect(lastSeq(slow)).toBeLessThan(lastSeq(reader));
    const rejoined = await connect({ session_id: sessionId, after_seq: lastSeq(slow) });
    await rejoined.waitUntil(() => (lastSeq(rejoined) >= lastSeq(reader) ? true : undefined));
    expect([...slow.logged, ...rejoined.logged]).toEqual(reader.logged);
  });

  it('drops streaming previews for a socket that is behind, yet delivers every logged event once it reads again', async () => {
    const limit = 256 * 1024;
    await start({ SOCKET_MAX_BUFFERED_BYTES: String(limit), SOCKET_SLOW_TIMEOUT_MS: '600000' });
    const reader = await connect();
    const slow = await connect({ session_id: String(reader.session.session_id) });
    slow.socket.pause();
    await chatUntil(reader, () => serverSockets().some((socket) => socket.bufferedAmount > limit));
    await eventually(() => serverSockets().some((socket) => socket.bufferedAmount > limit), 'the slow socket to fall behind');

    // One more answer while the slow socket is behind: it gets the answer, not its previews.
    const from = reader.events.length;
    reader.chat('One more');
    const answer = await reader.untilComplete({ from });
    expect(deltas(answer)).toBeGreaterThan(0);

    slow.socket.resume();
    await slow.waitUntil(() => (lastSeq(slow) >= lastSeq(reader) ? true : undefined), 30_000);
    expect(slow.logged).toEqual(reader.logged);
    const lastAnswerSeq = Number(answer.find((event) => event.type === 'assistant_message')!.seq);
    const slowAnswer = slow.events.slice(slow.events.findIndex((event) => event.seq === lastAnswerSeq - 1) + 1);
    expect(deltas(slowAnswer)).toBe(0);
    expect(slow.closeCode).toBeUndefined();
  });
});

describe('replay', () => {
  it('replays a long log in pages from the store, every event once and in order', async () => {
    const store = new RecordingStore();
    await start({}, { store });
    const { id, events } = await storedSession(store, 3000, 100);
    const client = await connect({ session_id: id, after_seq: 0 });
    await client.waitUntil(() => (lastSeq(client) >= 3000 ? true : undefined), 30_000);
    expect(client.logged).toEqual(events);

    const reads = store.listCalls.filter((call) => call.sessionId === id);
    expect(reads.length).toBeGreaterThan(3);
    for (const read of reads) expect(read.limit).toBeLessThanOrEqual(1000);
  });

  it('keeps live events flowing to another socket while a slow socket replays a long log, then gives the slow one everything in order', async () => {
    const store = new RecordingStore();
    await start({ SOCKET_MAX_BUFFERED_BYTES: String(256 * 1024), SOCKET_SLOW_TIMEOUT_MS: '600000' }, { store, answerChars: 1000 });
    // 20 MB of log: far more than the socket buffers between the server and a client that stops reading.
    const { id, events } = await storedSession(store, 5000, 4000);
    const live = await connect({ session_id: id, after_seq: 5000 });
    const replayStart = store.listCalls.length;
    const slow = await connect({ session_id: id, after_seq: 0 });
    slow.socket.pause();

    const from = live.events.length;
    live.chat('Meanwhile');
    expect((await live.untilComplete({ from })).map((event) => event.type)).toContain('assistant_message');
    // The slow socket's replay had not reached the end of the log when the live answer was done.
    expect(store.listCalls.slice(replayStart).some((call) => call.sessionId === id && call.afterSeq >= 5000)).toBe(false);

    // The session goes on talking while the slow socket catches up and joins the live audience.
    slow.socket.resume();
    const resumedAt = lastSeq(live);
    await chatUntil(live, () => lastSeq(slow) > resumedAt, 100);
    await chatUntil(live, () => false, 1);
    await slow.waitUntil(() => (lastSeq(slow) >= lastSeq(live) ? true : undefined), 30_000);
    expect(seqs(slow)).toEqual(range(1, lastSeq(live)));
    expect(slow.logged.slice(0, 5000)).toEqual(events);
    expect(slow.logged.slice(5000)).toEqual(live.logged);
  });
});

describe('the REST event log', () => {
  async function api(path: string): Promise<{ status: number; body: any }> {
    const response = await fetch(`${server!.url}${path}`);
    return { status: response.status, body: await response.json() };
  }

  it('pages the event log with limit, saying whether more follows', async () => {
    const store = new MemoryStore();
    await start({}, { store });
    const { id, events } = await storedSession(store, 25, 10);
    expect(await api(`/api/sessions/${id}/events?limit=10`)).toEqual({
      status: 200,
      body: { events: events.slice(0, 10), last_seq: 10, has_more: true },
    });
    expect((await api(`/api/sessions/${id}/events?after_seq=10&limit=10`)).body).toMatchObject({ last_seq: 20, has_more: true });
    expect((await api(`/api/sessions/${id}/events?after_seq=20&limit=10`)).body).toEqual({ events: events.slice(20), last_seq: 25, has_more: false });
    expect((await api(`/api/sessions/${id}/events?after_seq=25`)).body).toEqual({ events: [], last_seq: 25, has_more: false });
    expect((await api(`/api/sessions/${id}/events`)).body).toEqual({ events, last_seq: 25, has_more: false });
  });

  it('answers at most 1000 events when no limit is given', async () => {
    const store = new MemoryStore();
    await start({}, { store });
    const { id } = await storedSession(store, 1001, 10);
    const { body } = await api(`/api/sessions/${id}/events`);
    expect({ count: body.events.length, last_seq: body.last_seq, has_more: body.has_more }).toEqual({ count: 1000, last_seq: 1000, has_more: true });
  });

  it.each(['0', '-1', '10001', '2.5', 'ten', ''])('refuses limit=%s with 400 invalid_query', async (limit) => {
    const store = new MemoryStore();
    await start({}, { store });
    const { id } = await storedSession(store, 1, 10);
    expect(await api(`/api/sessions/${id}/events?limit=${limit}`)).toEqual({
      status: 400,
      body: { error: { code: 'invalid_query', message: expect.any(String) } },
    });
  });
});
