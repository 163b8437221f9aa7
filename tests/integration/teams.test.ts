import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SessionManager } from '@stepwise/backend';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

/**
 * Several people on one server behind an auth proxy (AUTH_MODE=header): each sees and drives only
 * their own chats, an admin watches everyone's, and the header counts only from the proxy.
 */
const HEADER = 'x-forwarded-user';
/** A server behind an auth proxy on this machine: the header counts from loopback. */
const PROXIED = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1' };
const as = (user: string): Record<string, string> => ({ [HEADER]: user });

const clients: TestClient[] = [];
async function connect(server: TestServer, user: string, query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server.wsUrl, query, { headers: as(user) });
  clients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function call(
  server: TestServer,
  user: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...as(user),
      ...(body === undefined ? {} : typeof body === 'string' ? { 'content-type': 'application/octet-stream' } : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (a download, an event stream): kept as text.
  }
  return { status: response.status, body: parsed };
}

/** An AG-UI RunAgentInput: one user message in thread `threadId`. */
const agUiInput = (threadId: string, content: string) => ({
  threadId,
  runId: 'r1',
  state: {},
  tools: [],
  context: [],
  forwardedProps: {},
  messages: [{ id: 'm1', role: 'user', content }],
});

describe('two users behind an auth proxy', () => {
  let server: TestServer;
  /** Alice's chat: a plain answer, a snapshot, a file, and an agent run waiting on her answer. */
  let alice: TestClient;
  let chatId: string;
  let snapshotId: string;
  let runId: string;
  let questionId: string;

  beforeAll(async () => {
    server = await startStepwise({ ...PROXIED, AUTH_ADMIN_USERS: 'root', LLM_PROVIDER: 'demo' });
    alice = await TestClient.connect(server.wsUrl, {}, { headers: as('alice') });
    chatId = alice.session.session_id;
    alice.chat('Hello there');
    await alice.untilComplete();
    alice.send({ type: 'snapshot_save', label: 'before the question' });
    snapshotId = String((await alice.waitFor('snapshot_saved')).snapshot_id);
    expect((await call(server, 'alice', 'POST', `/api/sessions/${chatId}/files?name=notes.txt`, 'alice only\n')).status).toBe(201);
    const from = alice.events.length;
    alice.chat('help me', { agent_mode: true, strategy: 'roa' });
    const asked = await alice.waitFor('agent_request_input', { from });
    runId = String(asked.run_id);
    questionId = String(asked.question_id);
  });
  afterAll(async () => {
    await alice?.close();
    await server?.close();
  });

  it('lists to each user their own chats only', async () => {
    const own = await call(server, 'alice', 'GET', '/api/sessions');
    expect(own.body.sessions.map((session: { id: string }) => session.id)).toContain(chatId);
    const bobs = await call(server, 'bob', 'GET', '/api/sessions');
    expect(bobs.status).toBe(200);
    expect(bobs.body.sessions.map((session: { id: string }) => session.id)).not.toContain(chatId);
    // Asking for everyone's is an admin's view; anyone else gets their own.
    const bobsAll = await call(server, 'bob', 'GET', '/api/sessions?scope=all');
    expect(bobsAll.body.sessions.map((session: { id: string }) => session.id)).not.toContain(chatId);
  });

  it('answers 404 to another user on every REST route, exactly as for a chat that does not exist', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', `/api/sessions/${chatId}`],
      ['GET', `/api/sessions/${chatId}/events`],
      ['GET', `/api/sessions/${chatId}/snapshots`],
      ['GET', `/api/sessions/${chatId}/files`],
      ['GET', `/api/sessions/${chatId}/files/notes.txt`],
      ['POST', `/api/sessions/${chatId}/files?name=bobs.txt`, 'from bob'],
      ['DELETE', `/api/sessions/${chatId}/files/notes.txt`],
      ['PATCH', `/api/sessions/${chatId}`, { title: 'Taken over' }],
      ['POST', `/api/sessions/${chatId}/stop`],
      ['DELETE', `/api/sessions/${chatId}`],
    ];
    for (const [method, path, body] of routes) {
      const other = await call(server, 'bob', method, path, body);
      const missing = await call(server, 'bob', method, path.replace(chatId, randomUUID()), body);
      expect({ route: `${method} ${path}`, status: other.status, code: other.body.error?.code }).toEqual({
        route: `${method} ${path}`,
        status: 404,
        code: 'not_found',
      });
      expect(JSON.stringify(other.body).replaceAll(chatId, 'ID')).toEqual(JSON.stringify(missing.body).replace(/[0-9a-f-]{36}/g, 'ID'));
    }
    // AG-UI: a run in her thread, or an answer to her question through it.
    const input = agUiInput(chatId, 'What is 2+2?');
    expect(await call(server, 'bob', 'POST', '/api/ag-ui', input)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const resume = { ...input, messages: [], resume: [{ interruptId: questionId, status: 'resolved', payload: 'What is 2^10?' }] };
    expect(await call(server, 'bob', 'POST', '/api/ag-ui', resume)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });

    // Nothing of hers changed: the run still waits, her file and title are there.
    const files = await call(server, 'alice', 'GET', `/api/sessions/${chatId}/files`);
    expect(files.body.files.map((file: { name: string }) => file.name)).toEqual(['notes.txt']);
    const detail = await call(server, 'alice', 'GET', `/api/sessions/${chatId}`);
    expect(detail.body.session.title).toBe('Hello there');
    expect(detail.body.runs.at(-1)).toMatchObject({ id: runId, status: 'running' });
  });

  it('gives a new AG-UI thread that two users open at once to one of them; the other gets none (404)', async () => {
    const sessions = server.container.resolve(SessionManager);
    const threadId = randomUUID();
    // Both look the new id up before either makes the chat: the second must not take the first's.
    const [carol, dave] = await Promise.all([
      sessions.open(threadId, { keepId: true, user: { id: 'carol', name: 'carol', admin: false } }),
      sessions.open(threadId, { keepId: true, user: { id: 'dave', name: 'dave', admin: false } }),
    ]);
    expect({ carol: carol?.access, dave: dave?.access, owner: carol?.chat.owner.id }).toEqual({ carol: 'own', dave: undefined, owner: 'carol' });
    sessions.release(carol!.chat);
    // Over HTTP too: the thread is carol's, and dave's post to it is answered as for a thread that does not exist.
    const input = { ...agUiInput(threadId, 'Hi'), runId: randomUUID() };
    expect(await call(server, 'dave', 'POST', '/api/ag-ui', input)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
  });

  it('gives another user who joins her chat over the socket a new chat of their own, and nothing of hers', async () => {
    const bob = await connect(server, 'bob', { session_id: chatId, after_seq: 0 });
    expect(bob.session.session_id).not.toBe(chatId);
    expect(bob.session.resumed).toBe(false);
    expect(bob.logged).toEqual([]);
    // Every message that names something of hers acts on his own (empty) chat, and finds nothing.
    const replies: Record<string, unknown> = {};
    const tries: [string, Record<string, unknown>][] = [
      ['answer', { type: 'agent_user_input', question_id: questionId, content: 'What is 2^10?' }],
      ['approve', { type: 'agent_user_input', question_id: questionId, approval: { decision: 'approve' } }],
      ['stop', { type: 'agent_control', action: 'stop' }],
      ['resume', { type: 'agent_control', action: 'resume', run_id: runId }],
      ['rollback', { type: 'snapshot_rollback', snapshot_id: snapshotId }],
      ['resume a snapshot', { type: 'snapshot_resume', snapshot_id: snapshotId }],
    ];
    for (const [name, message] of tries) {
      const from = bob.events.length;
      bob.send(message);
      replies[name] = (await bob.waitFor('error', { from })).code;
    }
    expect(replies).toEqual({
      answer: 'no_pending_input',
      approve: 'no_pending_input',
      stop: 'no_active_run',
      resume: 'not_resumable',
      rollback: 'unknown_snapshot',
      'resume a snapshot': 'unknown_snapshot',
    });
    // Her run still waits for her, and she answers it herself; the log says who did.
    const from = alice.events.length;
    alice.send({ type: 'agent_user_input', question_id: questionId, content: 'What is 2^10?' });
    const events = await alice.untilComplete({ from });
    expect(events.find((event) => event.update_type === 'agent_input_received')).toMatchObject({ question_id: questionId, by: { id: 'alice', name: 'alice' } });
    expect(events.find((event) => event.type === 'assistant_message')?.content).toContain('1024');
  });

  it('lets an admin list and read everyone’s chats and stop a run, but not change them', async () => {
    const all = await call(server, 'root', 'GET', '/api/sessions?scope=all');
    expect(all.body.sessions.find((session: { id: string }) => session.id === chatId)).toMatchObject({ owner: { id: 'alice', name: 'alice' } });
    expect((await call(server, 'root', 'GET', '/api/sessions')).body.sessions.map((session: { id: string }) => session.id)).not.toContain(chatId);
    expect((await call(server, 'root', 'GET', `/api/sessions/${chatId}`)).status).toBe(200);
    expect((await call(server, 'root', 'GET', `/api/sessions/${chatId}/events`)).status).toBe(200);
    expect((await call(server, 'root', 'GET', `/api/sessions/${chatId}/files/notes.txt`)).body).toBe('alice only\n');
    expect(await call(server, 'root', 'PATCH', `/api/sessions/${chatId}`, { title: 'Mine now' })).toMatchObject({
      status: 403,
      body: { error: { code: 'read_only' } },
    });
    expect(await call(server, 'root', 'DELETE', `/api/sessions/${chatId}`)).toMatchObject({ status: 403, body: { error: { code: 'read_only' } } });

    // Watching over the socket: her log, and only stop is taken.
    const from = alice.events.length;
    alice.chat('help me', { agent_mode: true, strategy: 'roa' });
    await alice.waitFor('agent_request_input', { from });
    const admin = await connect(server, 'root', { session_id: chatId, after_seq: 0 });
    expect(admin.session).toMatchObject({ session_id: chatId, resumed: true, read_only: true });
    // The replay follows the session message.
    await admin.waitFor('agent_request_input');
    expect(admin.logged.length).toBeGreaterThan(0);
    const before = admin.events.length;
    admin.chat('Let me in');
    expect(await admin.waitFor('error', { from: before })).toMatchObject({ code: 'read_only' });
    admin.send({ type: 'agent_control', action: 'stop' });
    const stopped = await alice.waitFor('agent_stopped', { from });
    expect(stopped).toMatchObject({ reason: 'user', by: { id: 'root', name: 'root' } });
    await alice.waitFor('response_complete', { from: alice.events.indexOf(stopped) });
  });
});

describe('the auth proxy’s header', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('is refused from an address outside TRUSTED_PROXIES, on REST and on the socket', async () => {
    server = await startStepwise({ AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '10.0.0.0/8' });
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
    const refused = await call(server, 'alice', 'GET', '/api/sessions');
    expect(refused).toMatchObject({ status: 401, body: { error: { code: 'unauthorized', message: expect.stringContaining('TRUSTED_PROXIES') } } });
    const status = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(server!.wsUrl, { headers: as('alice') });
      socket.on('unexpected-response', (_request, response) => {
        resolve(response.statusCode ?? 0);
        socket.terminate();
      });
      socket.on('open', () => {
        resolve(101);
        socket.close();
      });
      socket.on('error', (error) => {
        if (!/Unexpected server response/.test(error.message)) reject(error);
      });
    });
    expect(status).toBe(401);
  });

  it('is required from the proxy: a request through it without one names nobody', async () => {
    server = await startStepwise(PROXIED);
    const response = await fetch(`${server.url}/api/sessions`);
    expect(response.status).toBe(401);
    expect(await fetch(`${server.url}/api/me`, { headers: as('carol') }).then((reply) => reply.json())).toEqual({
      auth_mode: 'header',
      user: { id: 'carol', name: 'carol', admin: false },
      settings_admin: false,
    });
  });
});

describe('quotas per user', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('refuses a user’s run beyond MAX_RUNS_PER_USER, and not another user’s', async () => {
    server = await startStepwise({ ...PROXIED, LLM_PROVIDER: 'demo', MAX_RUNS_PER_USER: '1' });
    const first = await connect(server, 'alice');
    first.chat('help me', { agent_mode: true });
    await first.waitFor('agent_request_input');
    const second = await connect(server, 'alice');
    second.chat('What is 2+2?', { agent_mode: true });
    expect(await second.waitFor('error')).toMatchObject({ code: 'too_many_runs', message: expect.stringContaining('MAX_RUNS_PER_USER') });
    const bob = await connect(server, 'bob');
    bob.chat('What is 2+2?', { agent_mode: true });
    expect((await bob.untilComplete()).find((event) => event.type === 'assistant_message')?.content).toContain('4');
    // Once her run ends, she may start another.
    first.send({ type: 'agent_control', action: 'stop' });
    await first.waitFor('response_complete');
    const from = second.events.length;
    second.chat('What is 2+2?', { agent_mode: true });
    expect((await second.untilComplete({ from })).find((event) => event.type === 'assistant_message')?.content).toContain('4');
  });

  it('counts one user’s messages over all their sockets against MAX_MESSAGES_PER_SECOND_PER_USER', async () => {
    server = await startStepwise({ ...PROXIED, MAX_MESSAGES_PER_SECOND_PER_USER: '2' });
    const one = await connect(server, 'alice');
    const two = await connect(server, 'alice');
    const bob = await connect(server, 'bob');
    // 30 messages at a bucket of 2 a second: most must be refused however slowly they arrive.
    for (let index = 0; index < 15; index++) {
      one.send({ type: 'agent_control', action: 'stop' });
      two.send({ type: 'agent_control', action: 'stop' });
    }
    const errors = (client: TestClient) => client.events.filter((event) => event.type === 'error');
    // Every message gets its answer (a refusal, or "nothing to stop"), each on its own socket.
    await one.waitUntil(() => (errors(one).length >= 15 ? true : undefined));
    await two.waitUntil(() => (errors(two).length >= 15 ? true : undefined));
    const limited = [...errors(one), ...errors(two)].filter((event) => event.code === 'rate_limited');
    expect(limited.length).toBeGreaterThan(10);
    expect(limited[0]!.message).toContain('from one user');
    // Bob's bucket is his own.
    bob.send({ type: 'agent_control', action: 'stop' });
    expect(await bob.waitFor('error')).toMatchObject({ code: 'no_active_run' });
  });

  it('limits REST calls per user with 429', async () => {
    server = await startStepwise({ ...PROXIED, REST_MAX_REQUESTS_PER_MINUTE: '3' });
    const statuses: number[] = [];
    for (let index = 0; index < 4; index++) statuses.push((await call(server, 'alice', 'GET', '/api/sessions')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await call(server, 'alice', 'GET', '/api/sessions');
    expect(refused.body).toEqual({ error: { code: 'rate_limited', message: expect.stringContaining('at most 3 a minute') } });
    expect((await call(server, 'bob', 'GET', '/api/sessions')).status).toBe(200);
    // The health check and the web app are not counted.
    for (let index = 0; index < 5; index++) expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });
});
