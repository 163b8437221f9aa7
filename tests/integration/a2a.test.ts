// A2A: the @a2a-js/sdk client fetches Stepwise's agent card, streams a run, answers an
// input-required task with the next message, and cancels a task (its run stops); the A2A 0.3
// method names (message/send, tasks/get) answer too.
import { randomUUID } from 'node:crypto';
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { answerAfter, observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';

const TOKEN = 'a2a-test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };
let llm: ScriptedLlmServer;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, { AUTH_TOKEN: TOKEN });
  const fetchImpl: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), ...auth } });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new (await import('@a2a-js/sdk/client')).DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  client = await factory.createFromUrl(server.url);
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

const send = async (text: string, task?: Task, metadata: Record<string, unknown> = {}) =>
  (await client.sendMessage({ tenant: '', message: userMessage(text, task), configuration: undefined, metadata })) as Task;
const textOf = (message: Message | undefined) => (message?.parts ?? []).map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
const runsOf = async (chatId: string) =>
  ((await (await fetch(`${server.url}/api/sessions/${chatId}`, { headers: auth })).json()) as { runs: { status: string }[] }).runs;

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
