import { request as httpRequest } from 'node:http';
import { connect as tcpConnect } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SessionManager } from '@stepwise/backend';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach, cutting } from '../helpers/per-test.ts';
import { sharedTestStore, startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

/**
 * Attacks on the server's resources, scaled down: each is refused or made harmless, and the server
 * still answers everyone else.
 */
let server: TestServer | undefined;
let llm: ScriptedLlmServer | undefined;
const open = closeAfterEach();

async function connect(query: Record<string, string | number> = {}, headers: Record<string, string> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl, query, { headers });
  open(cutting(client));
  return client;
}

describe('tool names a model makes up', () => {
  it('are counted under one `other` label: /metrics keeps a bounded set of series', async () => {
    llm = open(await ScriptedLlmServer.start());
    const invented = Array.from({ length: 40 }, (_, index) => `made_up_${index}_${'x'.repeat(2_000)}`);
    llm.respond((request) => {
      if (request.phase === 'act') {
        const done = request.body.messages.some((message) => message.role === 'tool');
        return done
          ? { text: 'No more tools.' }
          : { toolCalls: [...invented.map((name) => ({ name, arguments: {} })), { name: 'calculator', arguments: { expression: '6*7' } }] };
      }
      if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: '42' }) };
      return { text: reasonText('Call everything.') };
    });
    server = open(await startStepwiseWithModel(llm.url));
    const client = await connect();
    client.chat('Try every tool', { agent_mode: true, tools: ['calculator'] });
    const events = await client.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events).filter((entry) => entry.startsWith('tool_error')).length).toBe(invented.length);

    const body = await (await fetch(`${server.url}/metrics`)).text();
    const tools = new Set([...body.matchAll(/^stepwise_tool_call_duration_seconds_count\{[^}]*tool="([^"]*)"/gm)].map((match) => match[1]));
    expect([...tools].sort()).toEqual(['calculator', 'other']);
    expect(body).toMatch(/stepwise_tool_call_duration_seconds_count\{tool="other",outcome="error"\} 40/);
    expect(body).not.toContain('made_up_');
    // Health still answers.
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });
});

/** A server behind an auth proxy on this machine: every user comes from the proxy's address. */
const PROXIED = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1' };
const as = (user: string): Record<string, string> => ({ 'x-forwarded-user': user });

/** Opens a socket as `user` and says how the upgrade ended: open (then closed again), or refused with a status and body. */
function tryUpgrade(user: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(server!.wsUrl, { headers: as(user) });
    socket.on('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    socket.on('open', () => {
      socket.terminate();
      resolve({ status: 101, body: '' });
    });
    socket.on('error', (error) => {
      if (!/Unexpected server response/.test(String(error))) reject(error);
    });
  });
}

describe('users behind one trusted proxy', () => {
  it('each have their own share of sockets: alice at her limit is refused 429 too_many_connections, bob is not', async () => {
    server = open(await startStepwiseWithModel('http://127.0.0.1:9/v1', { ...PROXIED, MAX_SOCKETS_PER_ADDRESS: '3' }));
    for (let index = 0; index < 3; index++) await connect({}, as('alice'));
    const refused = await tryUpgrade('alice');
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too_many_connections' } });
    // Bob comes through the same proxy address, and still gets all three of his.
    for (let index = 0; index < 3; index++) expect((await connect({}, as('bob'))).session.type).toBe('session');
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });

  it('each have their own share of runs: alice at her limit gets too_many_runs, bob’s first run starts', async () => {
    llm = open(await ScriptedLlmServer.start());
    llm.respond(() => ({ hang: true }));
    server = open(await startStepwiseWithModel(llm.url, { ...PROXIED, MAX_CONCURRENT_RUNS: '8', MAX_RUNS_PER_ADDRESS: '2' }));
    const alices = [await connect({}, as('alice')), await connect({}, as('alice')), await connect({}, as('alice'))];
    for (const client of alices.slice(0, 2)) client.chat('Hold a slot', { agent_mode: true });
    await llm.waitFor(() => llm!.requests.length >= 2);
    alices[2]!.chat('And another', { agent_mode: true });
    expect(await alices[2]!.waitFor('error')).toMatchObject({ code: 'too_many_runs' });

    const bob = await connect({}, as('bob'));
    bob.chat('My first run', { agent_mode: true });
    await bob.waitFor('agent_update');
    await llm.waitFor(() => llm!.requests.length >= 3);
    expect(bob.events.filter((event) => event.type === 'error')).toEqual([]);
    for (const client of [alices[0]!, alices[1]!, bob]) client.send({ type: 'agent_control', action: 'stop' });
    await Promise.all([alices[0]!, alices[1]!, bob].map((client) => client.untilComplete()));
  });
});

describe('clients known only by their address, behind a trusted proxy', () => {
  it('each count against the address the proxy forwards, never the proxy’s own', async () => {
    const token = 'proxied-token-0123456789abcdef';
    server = open(await startStepwise({ AUTH_TOKEN: token, TRUSTED_PROXIES: '127.0.0.1,::1', REST_MAX_REQUESTS_PER_MINUTE: '2' }));
    const list = (forwardedFor: string) =>
      fetch(`${server!.url}/api/sessions`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': forwardedFor } });
    expect((await list('10.0.0.1')).status).toBe(200);
    expect((await list('10.0.0.1')).status).toBe(200);
    const refused = await list('10.0.0.1');
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.code).toBe('rate_limited');
    // Another client through the same proxy has its own share.
    expect((await list('10.0.0.2')).status).toBe(200);
  });
});

describe('reading a large chat’s events over and over', () => {
  it('costs the reader its own share (429 rate_limited once spent), never another user’s, and the health check answers throughout', async () => {
    server = open(await startStepwise({ ...PROXIED, LLM_PROVIDER: 'demo', EVENTS_BYTES_PER_MINUTE: String(1024 * 1024) }));
    const alice = await connect({}, as('alice'));
    alice.chat('A chat that will be large');
    await alice.untilComplete();
    const big = alice.session.session_id;
    // About 2.5 MB of events in alice's chat.
    const store = await sharedTestStore();
    const first = (await store.lastSeq(big)) + 1;
    for (let seq = first; seq < first + 25; seq++) {
      await store.appendEvent(big, { seq, ts: new Date().toISOString(), type: 'assistant_message', content: `${seq}:${'x'.repeat(100_000)}` });
    }
    const bob = await connect({}, as('bob'));
    bob.chat('A small chat');
    await bob.untilComplete();

    const read = (user: string, id: string, afterSeq: number) =>
      fetch(`${server!.url}/api/sessions/${id}/events?after_seq=${afterSeq}&limit=5`, { headers: as(user) });
    const pages: { status: number; body: any; retryAfter: string | null }[] = [];
    let afterSeq = first - 1;
    for (let attempt = 0; attempt < 10; attempt++) {
      const response = await read('alice', big, afterSeq);
      const page = { status: response.status, body: await response.json(), retryAfter: response.headers.get('retry-after') };
      pages.push(page);
      if (page.status !== 200) continue;
      afterSeq = page.body.last_seq;
      if (!page.body.has_more) afterSeq = first - 1;
    }
    // About 500 KB a page against 1 MB a minute: three pages, then refusals naming the limit.
    const served = pages.filter((page) => page.status === 200);
    expect(served.length).toBe(3);
    expect(served.flatMap((page) => page.body.events.map((event: { seq: number }) => event.seq))).toEqual(
      Array.from({ length: 15 }, (_, index) => first + index),
    );
    const refused = pages.filter((page) => page.status !== 200);
    expect(refused.length).toBe(7);
    for (const page of refused) {
      expect(page.status).toBe(429);
      expect(page.body.error.code).toBe('rate_limited');
      expect(Number(page.retryAfter)).toBeGreaterThan(0);
    }
    // Bob, behind the same proxy, reads his chat; the health check answers.
    const bobs = await read('bob', bob.session.session_id, 0);
    expect(bobs.status).toBe(200);
    expect((await bobs.json()).events.length).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });
});

describe('a client that connects and leaves in a loop', () => {
  it('leaves no session in memory for long, while a chat it wrote in stays and is rejoined whole', async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo', SESSION_UNUSED_TTL_MS: '50' }));
    const sessions = server.container.resolve(SessionManager);
    const writer = await connect();
    writer.chat('Keep me');
    await writer.untilComplete();
    const kept = writer.session.session_id;
    await writer.close();
    for (let index = 0; index < 30; index++) await (await connect()).close();
    // Only the chat that holds something is still in memory (SESSION_IDLE_TTL_MS keeps it).
    await waitUntil(() => sessions.liveSessions === 1);
    const back = await connect({ session_id: kept, after_seq: 0 });
    expect(back.session.session_id).toBe(kept);
    await back.next(() => back.logged.some((event) => event.type === 'response_complete'));
  });
});

describe('slow uploads', () => {
  it('are cut with 408 once REQUEST_TIMEOUT_MS has passed, an address over MAX_CONNECTIONS_PER_ADDRESS is refused 429 at once, and others are served meanwhile', async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo', REQUEST_TIMEOUT_MS: '1500', MAX_CONNECTIONS_PER_ADDRESS: '8' }));
    // A socket of another client, open before the attack and past its time: upgraded sockets are not cut.
    const watcher = await TestClient.connect(server.wsUrl, {}, { localAddress: '127.0.0.3' });
    open(cutting(watcher));
    watcher.chat('A chat to upload into');
    await watcher.untilComplete();
    const chatId = watcher.session.session_id;
    const path = `/api/sessions/${chatId}/files?name=slow.txt`;

    const uploads = Array.from({ length: 12 }, () => slowUpload(server!.url, path, 1_000, 50));
    const answers = await Promise.all(uploads);
    const statuses = answers.map((answer) => answer.status).sort();
    // Eight held (each cut with 408 when its time was up), four refused at once with the typed error.
    expect(statuses).toEqual([...Array(8).fill(408), ...Array(4).fill(429)]);
    for (const refused of answers.filter((answer) => answer.status === 429))
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too_many_connections' } });
    expect((await get(`${server.url}/api/health`, '127.0.0.2')).status).toBe(200);

    // Nothing half-uploaded was kept; the address may upload again, and the old socket still works.
    const files = await get(`${server.url}/api/sessions/${chatId}/files`, '127.0.0.2');
    expect(JSON.parse(files.body)).toEqual({ files: [] });
    const upload = await fetch(`${server.url}${path}`, { method: 'POST', body: 'at a normal pace', headers: { 'content-type': 'application/octet-stream' } });
    expect(upload.status).toBe(201);
    expect(watcher.socket.readyState).toBe(WebSocket.OPEN);
  });
});

describe('slow uploads of users behind one trusted proxy', () => {
  it('each user has MAX_UPLOADS_PER_CLIENT going at once: alice’s next is refused 429 too_many_connections, bob’s goes through', async () => {
    server = open(await startStepwise({ ...PROXIED, LLM_PROVIDER: 'demo', MAX_UPLOADS_PER_CLIENT: '2', REQUEST_TIMEOUT_MS: '2500' }));
    const chatOf = async (user: string) => {
      const client = await connect({}, as(user));
      client.chat('A chat to upload into');
      await client.untilComplete();
      return client.session.session_id;
    };
    const [alices, bobs] = [await chatOf('alice'), await chatOf('bob')];
    const path = (id: string) => `/api/sessions/${id}/files?name=slow.txt`;
    const started: Promise<void>[] = [];
    const slow = Array.from({ length: 2 }, () => {
      let begun!: () => void;
      started.push(new Promise((resolve) => (begun = resolve)));
      return slowUpload(server!.url, path(alices), 1_000, 50, { headers: as('alice'), onContinue: () => begun() });
    });
    await Promise.all(started);
    const upload = (user: string, id: string) =>
      fetch(`${server!.url}${path(id)}`, { method: 'POST', body: 'at a normal pace', headers: { ...as(user), 'content-type': 'application/octet-stream' } });
    const refused = await upload('alice', alices);
    expect(refused.status).toBe(429);
    expect((await refused.json()).error.code).toBe('too_many_connections');
    expect((await upload('bob', bobs)).status).toBe(201);
    // Once alice's slow uploads are cut (408), she may upload again.
    expect((await Promise.all(slow)).map((answer) => answer.status)).toEqual([408, 408]);
    expect((await upload('alice', alices)).status).toBe(201);
  });
});

/**
 * Starts an upload of `size` bytes over a raw connection that sends one byte every `everyMs`;
 * resolves, once the server has closed the connection, with the status and body it answered (the
 * last status, after any 100 Continue). With `onContinue`, the request asks for a 100 Continue and
 * is told when it comes: the server has begun handling the upload.
 */
function slowUpload(
  url: string,
  path: string,
  size: number,
  everyMs: number,
  options: { headers?: Record<string, string>; onContinue?: () => void } = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port, host } = new URL(url);
  const extra = Object.entries({ ...options.headers, ...(options.onContinue ? { expect: '100-continue' } : {}) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return new Promise((resolve) => {
    const socket = tcpConnect(Number(port), hostname);
    let received = '';
    let sent = 0;
    const drip = setInterval(() => {
      if (sent < size && socket.writable) {
        socket.write('x');
        sent++;
      }
    }, everyMs);
    socket.on('connect', () =>
      socket.write(`POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/octet-stream\r\ncontent-length: ${size}\r\n${extra}\r\n`),
    );
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.startsWith('HTTP/1.1 100 ') && received.includes('\r\n\r\n')) {
        received = received.slice(received.indexOf('\r\n\r\n') + 4);
        options.onContinue?.();
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(drip);
      const end = received.indexOf('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), body: end === -1 ? '' : received.slice(end + 4) });
    });
  });
}

/** A GET from another local address (any 127.x address reaches a loopback server). */
function get(url: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { localAddress, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.end();
  });
}

/** Waits (polling briefly) until `condition` holds. */
async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('The condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
