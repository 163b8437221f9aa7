// A2A: the @a2a-js/sdk client fetches Stepwise's agent card, streams a run, answers an
// input-required task with the next message, and cancels a task (its run stops); the A2A 0.3
// method names (message/send, tasks/get) answer too.
import { randomUUID } from 'node:crypto';
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { openSqliteStore } from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answerAfter, observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess } from '../helpers/process.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';

const TOKEN = 'a2a-test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };
let llm: ScriptedLlmServer;
let server: TestServer;
let client: Client;

/** The A2A SDK's client of the server at `url`, with the token. */
async function clientOf(url: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...auth } });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(url);
}

beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, { AUTH_TOKEN: TOKEN });
  client = await clientOf(server.url);
});
afterAll(async () => {
  await closeAll(
    () => server?.close(),
    () => llm?.close(),
  );
});

function userMessage(text: string, task?: Task): Message {
  return {
    messageId: randomUUID(),
    contextId: task?.contextId ?? '',
    taskId: task?.id ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

const send = async (text: string, task?: Task, metadata: Record<string, unknown> = {}, via = client) =>
  (await via.sendMessage({ tenant: '', message: userMessage(text, task), configuration: undefined, metadata })) as Task;
const textOf = (message: Message | undefined) => (message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
const runsOf = async (chatId: string, url = server.url) =>
  ((await (await fetch(`${url}/api/sessions/${chatId}`, { headers: auth })).json()) as { runs: { status: string }[] }).runs;

/** Scripts a run that asks which city, and (when it goes on) answers with it. */
const askCity = (goesOn = true) => {
  llm.enqueue({ text: reasonText('Ask.') }, { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' } }] });
  if (goesOn) llm.enqueue({ text: observeText('Paris.', { final_answer: 'Paris it is.' }) });
};

describe('A2A (/.well-known/agent-card.json, /a2a)', () => {
  it('serves an agent card with a skill per strategy', async () => {
    const card = await client.getAgentCard();
    expect(card.skills.map((skill) => skill.id)).toEqual(expect.arrayContaining(['roa', 'plan_execute', 'autonomous', 'solver', 'research']));
    expect(card.capabilities?.streaming).toBe(true);
    expect((await fetch(`${server.url}/.well-known/agent-card.json`)).status).toBe(401);
  });

  it('streams a run: a working update per step, the answer as an artifact, then completed', async () => {
    llm.enqueue(...answerAfter('Use the calculator.', [{ name: 'calculator', arguments: { expression: '6*7' } }], 'It is 42.', 'The answer is 42.'));
    const updates: string[] = [];
    let answer = '';
    for await (const event of client.sendMessageStream({
      tenant: '',
      message: userMessage('What is 6*7?'),
      configuration: undefined,
      metadata: { strategy: 'roa' },
    })) {
      const payload = event.payload;
      if (payload?.$case === 'statusUpdate') updates.push(`${TaskState[payload.value.status!.state]}:${textOf(payload.value.status!.message)}`);
      if (payload?.$case === 'artifactUpdate') answer = textOf({ parts: payload.value.artifact!.parts } as Message);
    }
    expect(updates).toContain('TASK_STATE_WORKING:Step 1');
    expect(updates.at(-1)).toBe('TASK_STATE_COMPLETED:The answer is 42.');
    expect(answer).toBe('The answer is 42.');
  });

  it('a question makes the task input-required; the next message on the task answers it', async () => {
    askCity();
    const waiting = await send('Plan my trip');
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(waiting.status?.message)).toMatch(/Which city\?/);
    expect(waiting.status?.message?.metadata).toMatchObject({ kind: 'question', question_id: expect.any(String) });
    const done = await send('Paris', waiting);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf({ parts: done.artifacts[0]!.parts } as Message)).toBe('Paris it is.');
    expect((await client.getTask({ tenant: '', id: waiting.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('cancelling a task stops its run', async () => {
    askCity(false);
    const waiting = await send('Plan my trip');
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const chatId = (waiting.metadata as { chat_id: string }).chat_id;
    const canceled = await client.cancelTask({ tenant: '', id: waiting.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await vi.waitFor(async () => expect((await runsOf(chatId)).at(-1)?.status).toBe('stopped'), { timeout: 30_000, interval: 50 });
  });

  it('keeps tasks in the store: after a restart, a waiting task is read and answered', async () => {
    const store = await openSqliteStore(':memory:');
    const model = { LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', AUTH_TOKEN: TOKEN };
    const servers: TestServer[] = [];
    try {
      servers.push(await startStepwise(model, undefined, store));
      askCity();
      const waiting = await send('Plan my trip', undefined, {}, await clientOf(servers[0]!.url));
      expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

      // A new server on the same database, as after a crash (the first one is never told): nothing
      // of the first one's memory, the task in the store, the run recovered from its journal.
      servers.push(await startStepwise(model, undefined, store));
      const again = await clientOf(servers[1]!.url);
      const read = await again.getTask({ tenant: '', id: waiting.id, historyLength: undefined });
      expect(read).toMatchObject({ id: waiting.id, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED }, metadata: waiting.metadata });
      const done = await send('Paris', waiting, {}, again);
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf({ parts: done.artifacts[0]!.parts } as Message)).toBe('Paris it is.');
    } finally {
      await closeAll(...servers.reverse().map((started) => () => started.close()), () => store.close());
    }
  });

  it('answers A2A 0.3 method names: message/send, then tasks/get', async () => {
    llm.enqueue({ text: reasonText('Nothing to do.', { finish: true }) }, { text: observeText('Done.', { final_answer: 'Hello there.' }) });
    const rpc = async (method: string, params: unknown) =>
      (await (
        await fetch(`${server.url}/a2a`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
      ).json()) as { result: { id: string; kind: string; status: { state: string } } };
    const sent = await rpc('message/send', { message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text: 'Hello' }] } });
    expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect((await rpc('tasks/get', { id: sent.result.id })).result.status.state).toBe('completed');
  });
});

const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!pg || !redisUrl)('A2A tasks on several instances (PostgreSQL and Redis)', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  const processes = useServerProcesses();

  it('a task started on A is read and answered from B, and another one canceled from B stops its run', async () => {
    const database = await freshPostgresDatabase(pg!);
    await database.db.close();
    processes.open({ close: database.drop });
    const model = processes.open(await ScriptedLlmServer.start());
    // Each run asks which city, and answers with the one it is told.
    model.respond((request) => {
      const told = request.body.messages.some((message) => message.role === 'tool');
      if (request.phase === 'act')
        return told ? { text: 'No tool needed.' } : { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' } }] };
      if (request.phase === 'observe') return { text: observeText('Noted.', { should_continue: !told, final_answer: told ? 'Paris it is.' : '' }) };
      return { text: reasonText('Ask which city.') };
    });
    const env = (id: string) => ({
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl!,
      INSTANCE_ID: id,
      LLM_PROVIDER: 'openai',
      OPENAI_BASE_URL: model.url,
      OPENAI_API_KEY: 'k',
      AUTH_TOKEN: TOKEN,
    });
    const [a, b] = await Promise.all([startStepwiseProcess(env('a')), startStepwiseProcess(env('b'))]);
    const [onA, onB] = await Promise.all([clientOf(a.url), clientOf(b.url)]);

    const first = await send('Plan my trip', undefined, {}, onA);
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect((await onB.getTask({ tenant: '', id: first.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const done = await send('Paris', first, {}, onB);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf({ parts: done.artifacts[0]!.parts } as Message)).toBe('Paris it is.');

    const second = await send('Plan another trip', undefined, {}, onA);
    expect(second.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const canceled = await onB.cancelTask({ tenant: '', id: second.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const chatId = (second.metadata as { chat_id: string }).chat_id;
    await vi.waitFor(async () => expect((await runsOf(chatId, a.url)).at(-1)?.status).toBe('stopped'), { timeout: 30_000, interval: 50 });
    expect((await onA.getTask({ tenant: '', id: second.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });
});
