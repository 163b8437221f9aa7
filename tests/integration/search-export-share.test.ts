import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, openSqlStore, type Store } from '@stepwise/backend';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, stopAllProcesses } from '../helpers/process.ts';

/**
 * What people bring and take away: search across their chats, a chat exported, a chat shared by
 * a read-only link. Two people behind an auth proxy (AUTH_MODE=header) and an admin, on SQLite
 * and on PostgreSQL.
 */
const PROXIED = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1', AUTH_ADMIN_USERS: 'root' };
const as = (user: string | undefined): Record<string, string> => (user === undefined ? {} : { 'x-forwarded-user': user });

const pg = postgresUrl();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
}, 60_000);

type Database = { name: string; open: () => Promise<{ store: Store; another: () => Promise<Store> }> };
const databases: Database[] = [
  {
    name: 'SQLite',
    open: async () => {
      const store = await openSqliteStore(':memory:');
      cleanups.push(() => store.close());
      return { store, another: async () => store };
    },
  },
  ...(pg
    ? [
        {
          name: 'PostgreSQL',
          open: async () => {
            const database = await freshPostgresDatabase(pg);
            cleanups.push(database.drop);
            const store = await openSqlStore(database.db);
            cleanups.push(() => store.close());
            // Another instance's own connections to the same database.
            const another = async () => {
              const { PostgresDatabase } = await import('@stepwise/backend');
              const other = await openSqlStore(new PostgresDatabase(database.url));
              cleanups.push(() => other.close());
              return other;
            };
            return { store, another };
          },
        },
      ]
    : []),
];

async function start(store: Store, env: Record<string, string> = {}): Promise<{ server: TestServer; llm: ScriptedLlmServer }> {
  const llm = await ScriptedLlmServer.start();
  cleanups.push(() => llm.close());
  const server = await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', ...PROXIED, ...env }, undefined, store);
  cleanups.push(() => server.close());
  return { server, llm };
}

async function call(
  server: TestServer,
  user: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any; type: string }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...as(user), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Markdown, or another text: kept as it is.
  }
  return { status: response.status, body: parsed, type: response.headers.get('content-type') ?? '' };
}

/** One agent run of `user`'s over the socket: a calculator call, then `answer`. */
async function agentChat(server: TestServer, llm: ScriptedLlmServer, user: string, question: string, answer: string): Promise<string> {
  const client = await TestClient.connect(server.wsUrl, {}, { headers: as(user) });
  cleanups.push(() => client.close());
  llm.enqueue(
    { text: reasonText('Compute it.') },
    { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] },
    { text: observeText('It is 42.', { final_answer: answer }) },
  );
  client.chat(question, { agent_mode: true });
  await client.untilComplete();
  return String(client.session.session_id);
}

/** A chat as a run leaves it in the store: the question, the answer. */
async function storedChat(store: Store, owner: string, question: string, answer: string): Promise<string> {
  const id = randomUUID();
  await store.createSession(id, { id: owner, name: owner });
  await store.appendMessages(id, [{ role: 'user', content: question }], 0);
  await store.appendMessages(id, [{ role: 'assistant', content: answer }], 1);
  return id;
}

describe.each(databases)('search across chats on $name', (database) => {
  it('finds a word of an answer in chat 40 of 50, marked, and never another person’s chat', async () => {
    const { store } = await database.open();
    const { server, llm } = await start(store);
    const chats: string[] = [];
    for (let index = 1; index <= 50; index++) {
      if (index === 40) chats.push(await agentChat(server, llm, 'alice', 'Where did it land?', 'The zeppelin landed at Lakehurst at noon.'));
      else chats.push(await storedChat(store, 'alice', `Question ${index} about the weather`, `Answer ${index}: sunny spells.`));
    }
    const bobs = await storedChat(store, 'bob', 'Tell me about a zeppelin', 'A zeppelin is a rigid airship.');

    const alice = await call(server, 'alice', 'GET', '/api/search?q=Zeppelin');
    expect(alice.status).toBe(200);
    expect(alice.body.terms).toEqual(['zeppelin']);
    expect(alice.body.hits).toEqual([
      {
        session_id: chats[39],
        title: 'Where did it land?',
        last_activity_at: expect.any(String),
        match: 'message',
        role: 'assistant',
        after_seq: expect.any(Number),
        snippet: 'The zeppelin landed at Lakehurst at noon.',
        highlights: [[4, 12]],
      },
    ]);
    // Every word must match; the start of a word finds it.
    expect((await call(server, 'alice', 'GET', '/api/search?q=zepp%20lakeh')).body.hits.map((hit: { session_id: string }) => hit.session_id)).toEqual([
      chats[39],
    ]);
    expect((await call(server, 'alice', 'GET', '/api/search?q=zeppelin%20airship')).body.hits).toEqual([]);

    const bob = await call(server, 'bob', 'GET', '/api/search?q=zeppelin&scope=all');
    expect(new Set(bob.body.hits.map((hit: { session_id: string }) => hit.session_id))).toEqual(new Set([bobs]));
    expect(bob.body.hits.every((hit: { owner?: unknown }) => hit.owner === undefined)).toBe(true);
    expect((await call(server, 'carol', 'GET', '/api/search?q=zeppelin')).body.hits).toEqual([]);
    // An admin searches everyone's chats when asking for them, and each hit names its owner.
    const root = await call(server, 'root', 'GET', '/api/search?q=zeppelin&scope=all');
    expect(new Set(root.body.hits.map((hit: { session_id: string }) => hit.session_id))).toEqual(new Set([chats[39], bobs]));
    expect(root.body.hits.find((hit: { session_id: string }) => hit.session_id === chats[39]).owner).toEqual({ id: 'alice', name: 'alice' });
    expect((await call(server, 'root', 'GET', '/api/search?q=zeppelin')).body.hits).toEqual([]);

    expect(await call(server, 'alice', 'GET', '/api/search?q=%20%21%3F')).toMatchObject({ status: 400, body: { error: { code: 'invalid_query' } } });
    expect(await call(server, 'alice', 'GET', '/api/search')).toMatchObject({ status: 400, body: { error: { code: 'invalid_query' } } });
    expect((await call(server, undefined, 'GET', '/api/search?q=zeppelin')).status).toBe(401);
  });
});

describe('export', () => {
  it('gives a chat as JSON whose events are the history API’s, and as Markdown naming every step and tool call; by the history API’s rules', async () => {
    const store = await openSqliteStore(':memory:');
    cleanups.push(() => store.close());
    const { server, llm } = await start(store);
    const client = await TestClient.connect(server.wsUrl, {}, { headers: as('alice') });
    cleanups.push(() => client.close());
    llm.enqueue(
      { text: reasonText('Multiply first.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] },
      { text: observeText('That gives 42; now add.') },
      { text: reasonText('Add eight.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '42+8' } }] },
      { text: observeText('50.', { final_answer: 'The result is 50.' }) },
    );
    client.chat('What is 6*7+8?', { agent_mode: true });
    await client.untilComplete();
    const id = String(client.session.session_id);

    const exported = await call(server, 'alice', 'GET', `/api/sessions/${id}/export?format=json`);
    expect(exported.status).toBe(200);
    expect(exported.type).toMatch(/^application\/json/);
    const events = await call(server, 'alice', 'GET', `/api/sessions/${id}/events?limit=10000`);
    const history = await call(server, 'alice', 'GET', `/api/sessions/${id}`);
    expect(exported.body).toMatchObject({
      format: 'stepwise.chat',
      version: 1,
      session: history.body.session,
      messages: history.body.messages,
      runs: history.body.runs,
    });
    expect(exported.body.events).toEqual(events.body.events);

    const markdown = await call(server, 'alice', 'GET', `/api/sessions/${id}/export?format=markdown`);
    expect(markdown.status).toBe(200);
    expect(markdown.type).toMatch(/^text\/markdown/);
    const text: string = markdown.body;
    expect(text).toMatch(/^# What is 6\*7\+8\?\n/);
    const steps = events.body.events.filter((event: { update_type?: string }) => event.update_type === 'agent_turn_start');
    const calls = events.body.events.filter((event: { type: string }) => event.type === 'tool_start');
    expect(steps.length).toBe(2);
    expect(calls.length).toBe(2);
    for (const step of steps) expect(text).toContain(`### Step ${step.step}`);
    for (const toolCall of calls) expect(text).toContain(`Step ${toolCall.step}, call ${toolCall.tool_call_id}.`);
    expect(text.match(/#### Tool call `calculator`/g)).toHaveLength(2);
    for (const piece of [
      '## You\n\nWhat is 6*7+8?',
      '"expression": "6*7"',
      '"expression": "42+8"',
      '**Reason.** Multiply first.',
      '## Answer\n\nThe result is 50.',
    ])
      expect(text).toContain(piece);
    expect(text.indexOf('## You')).toBeLessThan(text.indexOf('### Step 1'));

    // The history API's rules: another person's chat is not found; an admin may read it; nobody signed in may not.
    expect((await call(server, 'bob', 'GET', `/api/sessions/${id}/export?format=json`)).status).toBe(404);
    expect((await call(server, 'root', 'GET', `/api/sessions/${id}/export?format=markdown`)).status).toBe(200);
    expect((await call(server, undefined, 'GET', `/api/sessions/${id}/export`)).status).toBe(401);
    expect(await call(server, 'alice', 'GET', `/api/sessions/${id}/export?format=pdf`)).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_query' } },
    });
    expect((await call(server, 'alice', 'GET', '/api/sessions/not-a-uuid/export')).status).toBe(400);
  });
});

describe.each(databases)('read-only links on $name', (database) => {
  it('show the chat as it stood to anyone with the link, copy it for a signed-in person, and stop at once when revoked, on every instance', async () => {
    const { store, another } = await database.open();
    // Two instances share the database and the folder of session files.
    const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-shared-files-'));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const { server: first, llm } = await start(store, { DATA_DIR: dataDir });
    const second = await startStepwise({ LLM_PROVIDER: 'demo', ...PROXIED, DATA_DIR: dataDir }, undefined, await another());
    cleanups.push(() => second.close());
    const id = await agentChat(first, llm, 'alice', 'What is 6*7?', 'It is 42.');
    const upload = await fetch(`${first.url}/api/sessions/${id}/files?name=notes.txt`, { method: 'POST', headers: as('alice'), body: 'private notes' });
    expect(upload.status).toBe(201);

    const made = await call(first, 'alice', 'POST', `/api/sessions/${id}/shares`, {});
    expect(made.status).toBe(201);
    const { token, url, id: shareId, at_seq: atSeq } = made.body;
    expect(made.body).toMatchObject({ include_files: false, expires_at: null, url: `/?shared=${token}` });
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url).toBe(`/?shared=${token}`);
    // What the chat says after the link was made is not shown through it.
    const more = await TestClient.connect(first.wsUrl, { session_id: id }, { headers: as('alice') });
    cleanups.push(() => more.close());
    llm.enqueue({ text: 'Later words.' });
    more.chat('A later question');
    await more.untilComplete();

    const history = await call(first, 'alice', 'GET', `/api/sessions/${id}/events?limit=10000`);
    const detail = await call(first, 'alice', 'GET', `/api/sessions/${id}`);
    const messagesThen = detail.body.messages.filter((message: { after_seq: number }) => message.after_seq < atSeq);
    expect(messagesThen.map((message: { content: string }) => message.content)).toEqual(expect.arrayContaining(['What is 6*7?', 'It is 42.']));
    expect(messagesThen.map((message: { content: string }) => message.content)).not.toContain('A later question');
    for (const server of [first, second]) {
      const shared = await call(server, undefined, 'GET', `/api/shared/${token}`);
      expect(shared.status).toBe(200);
      expect(shared.body.chat.events).toEqual(history.body.events.filter((event: { seq: number }) => event.seq <= atSeq));
      expect(shared.body.chat.messages).toEqual(messagesThen);
      expect(shared.body.files).toBeUndefined();
      expect((await call(server, undefined, 'GET', `/api/shared/${token}/files/notes.txt`)).status).toBe(404);
    }
    // Only the owner makes, lists and revokes links; nobody reaches the chat itself through one.
    expect((await call(first, 'bob', 'POST', `/api/sessions/${id}/shares`, {})).status).toBe(404);
    expect((await call(first, 'root', 'POST', `/api/sessions/${id}/shares`, {})).status).toBe(403);
    expect((await call(first, 'bob', 'GET', `/api/sessions/${id}/shares`)).status).toBe(404);
    expect((await call(first, 'bob', 'DELETE', `/api/sessions/${id}/shares/${shareId}`)).status).toBe(404);
    expect((await call(first, undefined, 'GET', `/api/sessions/${id}`)).status).toBe(401);
    expect((await call(first, 'bob', 'GET', `/api/sessions/${id}`)).status).toBe(404);

    // A signed-in person copies it into a chat of their own, which the owner cannot see.
    expect((await call(second, undefined, 'POST', `/api/shared/${token}/copy`)).status).toBe(401);
    const copy = await call(second, 'bob', 'POST', `/api/shared/${token}/copy`);
    expect(copy.status).toBe(201);
    const copied = await call(first, 'bob', 'GET', `/api/sessions/${copy.body.session_id}`);
    expect(copied.body.messages).toEqual(messagesThen);
    expect((await call(first, 'bob', 'GET', `/api/sessions/${copy.body.session_id}/events?limit=10000`)).body.last_seq).toBe(atSeq);
    expect((await call(first, 'alice', 'GET', `/api/sessions/${copy.body.session_id}`)).status).toBe(404);

    // A link with files shows them; revoked, every link answers 404 at once on both instances.
    const withFiles = await call(first, 'alice', 'POST', `/api/sessions/${id}/shares`, { include_files: true });
    const sharedFiles = await call(second, undefined, 'GET', `/api/shared/${withFiles.body.token}`);
    expect(sharedFiles.body.files.map((file: { name: string }) => file.name)).toEqual(['notes.txt']);
    expect((await call(second, undefined, 'GET', `/api/shared/${withFiles.body.token}/files/notes.txt`)).body).toBe('private notes');
    expect(
      (await call(first, 'alice', 'GET', `/api/sessions/${id}/shares`)).body.shares.map((share: { id: string; token?: string }) => [share.id, share.token]),
    ).toEqual([
      [shareId, undefined],
      [withFiles.body.id, undefined],
    ]);
    expect((await call(first, 'alice', 'DELETE', `/api/sessions/${id}/shares/${shareId}`)).status).toBe(204);
    for (const server of [second, first]) {
      expect(await call(server, undefined, 'GET', `/api/shared/${token}`)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
      expect((await call(server, 'bob', 'POST', `/api/shared/${token}/copy`)).status).toBe(404);
    }
    expect((await call(second, undefined, 'GET', `/api/shared/${withFiles.body.token}`)).status).toBe(200);
    expect((await call(first, undefined, 'GET', '/api/shared/not-a-token')).status).toBe(404);

    // A link with an expiry stops working when it comes.
    const brief = await call(first, 'alice', 'POST', `/api/sessions/${id}/shares`, { expires_in_hours: 0.0003 });
    expect(Date.parse(brief.body.expires_at)).toBeGreaterThan(Date.now() - 5_000);
    await vi.waitFor(async () => expect((await call(second, undefined, 'GET', `/api/shared/${brief.body.token}`)).status).toBe(404), {
      timeout: 10_000,
      interval: 100,
    });
  });
});

describe('the OpenAPI document', () => {
  it('describes search, export and read-only links, the shared chat open to anyone', async () => {
    const store = await openSqliteStore(':memory:');
    cleanups.push(() => store.close());
    const { server } = await start(store);
    const document = (await call(server, 'alice', 'GET', '/api/openapi.json')).body;
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/api/search',
        '/api/sessions/{id}/export',
        '/api/sessions/{id}/shares',
        '/api/sessions/{id}/shares/{shareId}',
        '/api/shared/{token}',
        '/api/shared/{token}/files/{name}',
        '/api/shared/{token}/copy',
      ]),
    );
    const search = document.paths['/api/search'].get;
    expect(search.parameters.map((parameter: { in: string; name: string }) => `${parameter.in}:${parameter.name}`).sort()).toEqual([
      'query:limit',
      'query:q',
      'query:scope',
    ]);
    // The response is the named SearchResults schema.
    const results = search.responses['200'].content['application/json'].schema;
    expect(results).toEqual({ $ref: '#/components/schemas/SearchResults' });
    expect(document.components.schemas.SearchResults.properties.hits.type).toBe('array');
    expect(document.paths['/api/sessions/{id}/export'].get.parameters.find((parameter: { name: string }) => parameter.name === 'format').schema.enum).toEqual([
      'markdown',
      'json',
    ]);
    expect(Object.keys(document.paths['/api/sessions/{id}/shares'])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(document.paths['/api/shared/{token}'].get.security).toEqual([]);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!pg || !redisUrl)('read-only links on two Stepwise processes sharing PostgreSQL and Redis', () => {
  it('answer 404 on both the moment the owner revokes on either', { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
    const database = await freshPostgresDatabase(pg!);
    await database.db.close();
    cleanups.push(database.drop);
    cleanups.push(() => stopAllProcesses({ signal: 'SIGKILL' }));
    const env = (id: string) => ({ DATABASE_URL: database.url, REDIS_URL: redisUrl!, INSTANCE_ID: id, LLM_PROVIDER: 'demo', ...PROXIED });
    const [a, b] = await Promise.all([startStepwiseProcess(env('a')), startStepwiseProcess(env('b'))]);
    const client = await TestClient.connect(a.wsUrl, {}, { headers: as('alice') });
    cleanups.push(() => client.close());
    client.chat('Hello there');
    await client.untilComplete();
    const id = String(client.session.session_id);
    const instance = (server: { url: string }) => server as TestServer;

    const made = await call(instance(a), 'alice', 'POST', `/api/sessions/${id}/shares`, { expires_in_hours: 24 });
    expect(made.status).toBe(201);
    for (const server of [a, b]) expect((await call(instance(server), undefined, 'GET', `/api/shared/${made.body.token}`)).status).toBe(200);
    expect((await call(instance(b), 'alice', 'DELETE', `/api/sessions/${id}/shares/${made.body.id}`)).status).toBe(204);
    for (const server of [a, b]) expect((await call(instance(server), undefined, 'GET', `/api/shared/${made.body.token}`)).status).toBe(404);
  });
});

describe('a shared link’s routes', () => {
  it('are counted against each client’s REST calls a minute, though open to anyone', async () => {
    const store = await openSqliteStore(':memory:');
    cleanups.push(() => store.close());
    const { server } = await start(store, { REST_MAX_REQUESTS_PER_MINUTE: '3' });
    const statuses: number[] = [];
    for (let call = 0; call < 4; call++) statuses.push((await fetch(`${server.url}/api/shared/${'x'.repeat(43)}`)).status);
    expect(statuses).toEqual([404, 404, 404, 429]);
  });
});
