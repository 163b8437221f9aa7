import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { REDIS_SERVER, waitForRedis } from '../../scripts/redis.mjs';
import type { SettingsView } from '@stepwise/shared-types';
import { EVERYTHING_STDIO } from '../fixtures/mcp-servers.ts';
import { observeText, reasonText, type RecordedRequest, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { useServerProcesses } from '../helpers/per-test.ts';
import { computeThenAsk, scriptFirstActHanging } from '../helpers/calculating-model.ts';
import { PROCESS_TEST_TIMEOUT_MS, spawnTracked, startStepwiseProcess, type StepwiseProcess, stopProcess } from '../helpers/process.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const pg = postgresUrl();
const sharedRedis = process.env.TEST_REDIS_URL;
if (!sharedRedis && process.env.REQUIRE_POSTGRES === '1') throw new Error('TEST_REDIS_URL is not set: run the suite with the test command, which starts Redis');

let llm: ScriptedLlmServer | undefined;
const processes = useServerProcesses();

type Event = Record<string, unknown>;

/** Two Stepwise processes on one fresh PostgreSQL database and one Redis, the scripted model behind both. */
async function twoInstances(redisUrl = sharedRedis!, extra: Record<string, string> = {}) {
  const database = await freshPostgresDatabase(pg!);
  await database.db.close();
  processes.open({ close: database.drop });
  llm = processes.open(await ScriptedLlmServer.start());
  const env = (id: string) => ({
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    INSTANCE_ID: id,
    CLUSTER_LEASE_MS: '1500',
    LLM_PROVIDER: 'openai',
    OPENAI_BASE_URL: llm!.url,
    OPENAI_API_KEY: 'k',
    LLM_MAX_RETRIES: '0',
    ...extra,
  });
  const [a, b] = await Promise.all([startStepwiseProcess(env('a')), startStepwiseProcess(env('b'))]);
  return { a, b };
}

async function connect(instance: StepwiseProcess, query: Record<string, string | number> = {}, headers?: Record<string, string>): Promise<TestClient> {
  const client = await TestClient.connect(instance.wsUrl, query, { headers });
  return processes.socket(client);
}

const seqs = (client: TestClient) => client.logged.map((event) => (event as Event).seq as number);
const gapless = (numbers: number[]) => numbers.every((seq, index) => seq === index + 1);

/** `waiting`, and when it fails, the failure with what each instance logged (a take-over spans both). */
async function withLogs<T>(waiting: Promise<T>, instances: Record<string, StepwiseProcess>): Promise<T> {
  try {
    return await waiting;
  } catch (error) {
    const logs = Object.entries(instances).map(([name, instance]) => `--- instance ${name} ---\n${instance.output().slice(-20_000)}`);
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`, { cause: error });
  }
}

/** Waits until `client` has seen the event with this seq. */
const seen = (client: TestClient, seq: number) => client.next((event) => (event as Event).seq === seq, { timeoutMs: 30_000 });

describe.skipIf(!pg || !sharedRedis)('several instances on PostgreSQL and Redis', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('a socket on B follows a run on A with the same gapless events, its chat waits for the run on A, and stops the run from B', async () => {
    const { a, b } = await twoInstances();
    llm!.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working.') }));
    const onA = await connect(a);
    const sessionId = onA.session.session_id;
    onA.chat('Long job', { agent_mode: true });
    const act = await llm!.waitFor((request) => request.phase === 'act', 30_000);
    // The reasoning is committed as the act request leaves: wait for it to reach A's socket.
    await onA.waitFor('agent_reason', { timeoutMs: 30_000 });

    const onB = await connect(b, { session_id: sessionId, after_seq: 0 });
    const upTo = Math.max(...seqs(onA));
    await seen(onB, upTo);
    // B has what A has; whatever may still be on its way to A is compared once the run is over, below.
    expect(seqs(onB).filter((seq) => seq <= upTo)).toEqual(seqs(onA).filter((seq) => seq <= upTo));

    // A message sent during the run, at B: stored for the run on A (a person's stop withdraws it, below).
    onB.chat('Something else', { agent_mode: true });
    const queued = await onB.waitFor('message_queued');

    onB.send({ type: 'agent_control', action: 'stop' });
    await llm!.waitForAbort(act, 10_000);
    const onAEvents = (await onA.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(onAEvents).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    expect(await onA.waitFor('message_cancelled', { timeoutMs: 30_000 })).toMatchObject({ message_id: queued.message_id });
    await seen(onB, Math.max(...seqs(onA)));
    expect(seqs(onB)).toEqual(seqs(onA));
    expect(gapless(seqs(onA))).toBe(true);
  });

  it('a run parked on A holds nothing there; answered on B, it goes on from where it stood, no completed call made again', async () => {
    const { a, b } = await twoInstances(sharedRedis, { AGENT_INPUT_TIMEOUT_MS: '300' });
    llm!.enqueue(...computeThenAsk());
    const onA = await connect(a);
    const sessionId = onA.session.session_id;
    onA.chat('Compute and ask me', { agent_mode: true });
    const question = await onA.waitFor('agent_request_input', { timeoutMs: 30_000 });
    await withLogs(onA.waitFor('agent_parked', { timeoutMs: 30_000 }), { a, b });

    const onB = await connect(b, { session_id: sessionId, after_seq: 0 });
    await seen(onB, Math.max(...seqs(onA)));
    llm!.enqueue({ text: observeText('Blue it is.', { final_answer: '42, in blue.' }) });
    onB.send({ type: 'agent_user_input', question_id: question.question_id, content: 'blue' });
    const events = (await withLogs(onB.untilComplete({ timeoutMs: 30_000 }), { a, b })) as Event[];
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(llm!.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'observe']);
    expect(events.filter((event) => event.type === 'tool_complete' && event.tool_name === 'calculator')).toHaveLength(1);
    expect(gapless(seqs(onB))).toBe(true);
  });

  it('counts a user’s runs on every instance against MAX_RUNS_PER_USER, also when their starts race', async () => {
    const proxied = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1' };
    const { a, b } = await twoInstances(sharedRedis, { ...proxied, MAX_RUNS_PER_USER: '2' });
    // Every run holds at its first model call, so each one started is still going when the last start is answered.
    llm!.respond(() => ({ hang: true }));
    const alice = { 'X-Forwarded-User': 'alice' };
    const sockets = await Promise.all([a, b, a, b, a, b, a, b].map((instance) => connect(instance, {}, alice)));
    for (const socket of sockets) socket.chat('Long job', { agent_mode: true });
    const outcomes = await Promise.all(
      sockets.map((socket) => socket.next((event) => event.update_type === 'agent_start' || event.type === 'error', { timeoutMs: 30_000 })),
    );
    const refused = outcomes.filter((event) => event.type === 'error');
    expect(outcomes.length - refused.length).toBe(2);
    expect(refused.map((event) => event.code)).toEqual(Array(6).fill('too_many_runs'));
    // Another user is not counted against her.
    const bob = await connect(b, {}, { 'X-Forwarded-User': 'bob' });
    bob.chat('Long job', { agent_mode: true });
    await bob.waitFor('agent_start', { timeoutMs: 30_000 });
  });

  it('a socket on B sees the streamed previews of a run on A, the same as a socket on A, each before its full event', async () => {
    const { a, b } = await twoInstances();
    const onA = await connect(a);
    let caughtUp: () => void = () => undefined;
    const bCaughtUp = new Promise<void>((resolve) => (caughtUp = resolve));
    llm!.respond((request) => {
      // The reasoning streams only once B has read everything A logged before it.
      if (request.phase === 'reason') return { text: reasonText('First one, then two, then three, then four, then five.'), chunkDelayMs: 20, after: bCaughtUp };
      if (request.phase === 'act') return { text: 'No tool needed.' };
      return { text: `Done.\n\n\`\`\`json\n${JSON.stringify({ observation: 'ok', should_continue: false, final_answer: 'Five.' })}\n\`\`\`` };
    });
    onA.chat('Count to five', { agent_mode: true });
    await llm!.waitFor((request) => request.phase === 'reason', 30_000);
    // The step's start is committed as the reason request leaves: wait for it to reach A's socket.
    await onA.waitFor('agent_turn_start', { timeoutMs: 30_000 });
    const onB = await connect(b, { session_id: onA.session.session_id, after_seq: 0 });
    await seen(onB, Math.max(...seqs(onA)));
    caughtUp();
    await onA.untilComplete({ timeoutMs: 30_000 });
    await seen(onB, Math.max(...seqs(onA)));
    const previews = (client: TestClient) =>
      client.events.filter((event) => (event as Event).update_type === 'agent_reason_delta').map((event) => (event as Event).delta as string);
    expect(previews(onA).join('')).toContain('First one');
    expect(previews(onB)).toEqual(previews(onA));
    const reasoned = onB.events.findIndex((event) => (event as Event).update_type === 'agent_reason');
    expect(onB.events.findLastIndex((event) => (event as Event).update_type === 'agent_reason_delta')).toBeLessThan(reasoned);
  });

  it('a question asked by a run on A is answered from B', async () => {
    const { a, b } = await twoInstances();
    llm!.respond((request: RecordedRequest) => {
      if (request.phase === 'act') {
        const answered = request.body.messages.some((message) => message.role === 'tool');
        return answered ? { text: 'No tool needed.' } : { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' } }] };
      }
      if (request.phase === 'observe') {
        const answered = request.body.messages.some((message) => message.content?.includes('Paris'));
        return {
          text: `Noted.\n\n\`\`\`json\n${JSON.stringify({ observation: 'ok', should_continue: !answered, final_answer: answered ? 'Paris it is.' : '' })}\n\`\`\``,
        };
      }
      return { text: reasonText('Ask which city.') };
    });
    const onA = await connect(a);
    onA.chat('Plan my trip', { agent_mode: true });
    const question = (await onA.waitFor('agent_request_input', { timeoutMs: 30_000 })) as Event;
    const onB = await connect(b, { session_id: onA.session.session_id, after_seq: 0 });
    await seen(onB, question.seq as number);
    onB.send({ type: 'agent_user_input', content: 'Paris', question_id: question.question_id });
    const events = (await onA.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(onB.events.some((event) => (event as Event).type === 'error')).toBe(false);
  });

  it('when A is killed mid-run, B takes the run over from its journal and finishes it, repeating no completed model call; a message sent at B for the run on A is read once', async () => {
    const { a, b } = await twoInstances();
    scriptFirstActHanging(llm!);
    const onA = await connect(a);
    const sessionId = onA.session.session_id;
    onA.chat('What is 6*7?', { agent_mode: true });
    await llm!.waitFor((request) => request.phase === 'act', 30_000);
    const onB = await connect(b, { session_id: sessionId, after_seq: 0 });
    // Acknowledged at B and handed to the run on A, which dies before its next model call: B's take-over reads it.
    onB.chat('Use 6*7 exactly.');
    await onB.waitFor('message_queued', { timeoutMs: 30_000 });
    await a.kill();

    const events = (await withLogs(onB.untilComplete({ timeoutMs: 60_000 }), { a, b })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('It is 42.');
    // The reason call A completed was not made again; only the act A never finished was.
    expect(llm!.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'act', 'observe']);
    const steered = (request: RecordedRequest) => request.body.messages.filter((message) => message.content?.includes('Use 6*7 exactly.')).length;
    expect(llm!.requests.map(steered)).toEqual([0, 0, 1, 1]);
    expect(events.filter((event) => event.update_type === 'agent_steer')).toHaveLength(1);
    expect(gapless(seqs(onB))).toBe(true);
  });

  it('an instance stopped with SIGTERM hands its run over: another instance finishes it, and no ending is logged in between', async () => {
    const { a, b } = await twoInstances();
    let acts = 0;
    llm!.respond((request) => {
      if (request.phase === 'act') return ++acts === 1 ? { hang: true } : { text: 'No tool needed.' };
      if (request.phase === 'observe')
        return {
          text: `Done.\n\n\`\`\`json\n${JSON.stringify({ observation: 'done', should_continue: false, final_answer: 'Handed over and done.' })}\n\`\`\``,
        };
      return { text: reasonText('Think.') };
    });
    const onA = await connect(a);
    onA.chat('A long job', { agent_mode: true });
    const act = await llm!.waitFor((request) => request.phase === 'act', 30_000);
    const onB = await connect(b, { session_id: onA.session.session_id, after_seq: 0 });
    a.process.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(act.aborted || (await llm!.waitForAbort(act, 10_000)).aborted).toBe(true);
    const events = (await withLogs(onB.untilComplete({ timeoutMs: 60_000 }), { a, b })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(summarize(events).some((kind) => kind.startsWith('agent_stopped'))).toBe(false);
    expect(llm!.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'act', 'observe']);
    expect(gapless(seqs(onB))).toBe(true);
  });

  it('Redis going away mid-run and coming back loses nothing: every event reaches the socket on the other instance, in order', async () => {
    const port = await freePort();
    const dir = processes.folder('stepwise-redis-test-');
    const startRedis = async () => {
      const child = spawnTracked(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
        stdio: 'ignore',
        description: 'redis-server (test)',
      });
      await waitForRedis(port);
      return child;
    };
    const redis = await startRedis();
    const { a, b } = await twoInstances(`redis://127.0.0.1:${port}`);
    llm!.respond((request) => {
      if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: '2+2' } }], delayMs: 1_500 };
      if (request.phase === 'observe')
        return { text: `4.\n\n\`\`\`json\n${JSON.stringify({ observation: '4', should_continue: false, final_answer: 'Four.' })}\n\`\`\`` };
      return { text: reasonText('Compute.') };
    });
    const onA = await connect(a);
    onA.chat('What is 2+2?', { agent_mode: true });
    await llm!.waitFor((request) => request.phase === 'act', 30_000);
    const onB = await connect(b, { session_id: onA.session.session_id, after_seq: 0 });
    // Redis goes away while the model answers: the rest of the run is logged without it.
    await stopProcess(redis.pid, { signal: 'SIGKILL' });
    const events = (await onA.untilComplete({ timeoutMs: 60_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    // The socket on B heard of none of it through Redis: it caught up from the database, then Redis came back.
    await startRedis();
    await seen(onB, Math.max(...seqs(onA)));
    expect(seqs(onB)).toEqual(seqs(onA));
    expect(gapless(seqs(onB))).toBe(true);
  });

  it('an admin’s settings change on A holds for the next run on A and on B without a restart; others get 403, a pinned setting is refused, the key never comes back', async () => {
    const secret = 'sk-set-in-the-app-0123456789';
    const signIn = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1', AUTH_ADMIN_USERS: 'root' };
    // The key is the app's to set (none in the environment); AGENT_MAX_STEPS pins that limit.
    const { a, b } = await twoInstances(sharedRedis, { ...signIn, AGENT_MAX_STEPS: '3', OPENAI_API_KEY: '' });
    const settings = (instance: StepwiseProcess, user: string, change?: unknown) =>
      fetch(`${instance.url}/api/settings`, {
        method: change === undefined ? 'GET' : 'PATCH',
        headers: { 'X-Forwarded-User': user, ...(change === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(change === undefined ? {} : { body: JSON.stringify(change) }),
      });
    const refusal = async (response: Response) => ({
      status: response.status,
      ...((await response.json()) as { error: { code: string; issues?: unknown[] } }).error,
    });

    expect(await refusal(await settings(a, 'alice'))).toMatchObject({ status: 403, code: 'admin_only' });
    expect(await refusal(await settings(b, 'alice', { model: 'mine' }))).toMatchObject({ status: 403, code: 'admin_only' });
    expect(await refusal(await settings(a, 'root', { limits: { max_steps: 5 } }))).toMatchObject({
      status: 409,
      code: 'setting_locked',
      issues: [{ path: 'limits.max_steps', message: expect.stringContaining('AGENT_MAX_STEPS') }],
    });
    const invalid = await refusal(await settings(a, 'root', { model: '', approval: { calculator: 'sometimes' } }));
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_settings' });
    expect(invalid.issues).toHaveLength(2);

    const change = { model: 'app-model', model_endpoint: { api_key: secret }, approval: { calculator: 'ask' }, mcp_servers: { everything: EVERYTHING_STDIO } };
    const changed = await settings(a, 'root', change);
    const answer = await changed.text();
    expect(changed.status, answer).toBe(200);
    expect(JSON.parse(answer)).toMatchObject({
      version: 1,
      model: { value: 'app-model', source: { kind: 'app' } },
      model_endpoint: { api_key: { set: true } },
    });

    // Each instance has the change in force, its MCP server connected (a process of its own to start).
    for (const instance of [a, b]) {
      await withLogs(
        eventually(async () => {
          const view = (await (await settings(instance, 'root')).json()) as SettingsView;
          return view.version === 1 && view.mcp_servers.find((server) => server.key === 'everything')?.live?.status === 'connected';
        }),
        { a, b },
      );
    }
    llm!.respond((request) =>
      request.phase === 'act' ? { toolCalls: [{ name: 'calculator', arguments: { expression: '2+2' } }] } : { text: reasonText('Add them.') },
    );
    for (const instance of [a, b]) {
      const client = await connect(instance, {}, { 'X-Forwarded-User': 'root' });
      client.chat('What is 2+2?', { agent_mode: true, tools: ['calculator', 'everything__echo'] });
      // The approval policy: the calculator, which runs unasked by default, now waits for a person.
      expect(await client.waitFor('agent_request_input', { timeoutMs: 30_000 })).toMatchObject({ kind: 'approval', tool: 'calculator' });
      const act = llm!.requests.filter((request) => request.phase === 'act').at(-1)!;
      expect(act.body.model).toBe('app-model');
      expect(act.headers.authorization).toBe(`Bearer ${secret}`);
      expect(act.toolNames).toContain('everything__echo');
      client.send({ type: 'agent_control', action: 'stop' });
      await client.untilComplete({ timeoutMs: 30_000 });
    }

    // The key never comes back: not in the settings, their record or the API's description, on either instance; nor in the logs.
    const bodies = await Promise.all(
      [a, b].flatMap((instance) => [
        settings(instance, 'root').then((response) => response.text()),
        fetch(`${instance.url}/api/openapi.json`, { headers: { 'X-Forwarded-User': 'root' } }).then((response) => response.text()),
      ]),
    );
    for (const text of [answer, ...bodies, a.output(), b.output()]) expect(text).not.toContain(secret);
    const [record] = (JSON.parse(bodies[2]!) as SettingsView).changes;
    expect(record).toMatchObject({ version: 1, by: { id: 'root', name: 'root' } });
    expect(record!.changes).toContainEqual({ setting: 'model_endpoint.api_key', before: 'not set', after: 'set' });
    expect(record!.changes.map((item) => item.setting)).toEqual(['model_endpoint.api_key', 'model', 'approval.calculator', 'mcp_servers.everything']);

    // Removed on B, the MCP server is disconnected on A too.
    expect((await settings(b, 'root', { mcp_servers: null })).status).toBe(200);
    await eventually(async () => {
      const view = (await (await settings(a, 'root')).json()) as SettingsView;
      return view.version === 2 && view.mcp_servers.length === 0;
    });
  });
});

/** Resolves once `check` holds, asking again every 100 ms; rejects after `timeoutMs`. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Not so after ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
    server.on('error', reject);
  });
}
