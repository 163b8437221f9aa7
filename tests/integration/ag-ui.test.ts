// AG-UI: a standard client (@ag-ui/client's HttpAgent, which verifies every event it gets) drives
// each strategy's demo over POST /api/ag-ui, answers a question through an interrupt and its resume,
// and a dropped stream leaves the run going.
import { randomUUID } from 'node:crypto';
import { type BaseEvent, EventType, HttpAgent, type Interrupt } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { writesHello } from '../helpers/approvals.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';

type AnyEvent = BaseEvent & Record<string, unknown>;

let server: TestServer;

beforeAll(async () => {
  server = await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
});
afterAll(async () => {
  await server?.close();
});

const CHAIN = 'First compute 12*7, then add 15, divide by 3, subtract 4';

function agent(threadId = randomUUID()): HttpAgent {
  return new HttpAgent({ url: `${server.url}/api/ag-ui`, threadId });
}

/** Runs the agent once and returns every event it streamed (the client has verified their order). */
async function run(client: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}): Promise<AnyEvent[]> {
  const events: AnyEvent[] = [];
  await client.runAgent(parameters, { onEvent: ({ event }) => void events.push(event as AnyEvent) });
  return events;
}

function ask(client: HttpAgent, content: string, forwardedProps: Record<string, unknown> = {}): Promise<AnyEvent[]> {
  client.addMessage({ id: randomUUID(), role: 'user', content });
  return run(client, { forwardedProps: { max_steps: 20, ...forwardedProps } });
}

const ofType = (events: AnyEvent[], type: EventType) => events.filter((event) => event.type === type);
const finished = (events: AnyEvent[]) => events.at(-1) as AnyEvent & { outcome?: { type: string; interrupts?: Interrupt[] }; result?: Record<string, unknown> };
const assistantText = (client: HttpAgent) =>
  client.messages
    .filter((message) => message.role === 'assistant')
    .map((message) => String(message.content ?? ''))
    .join('\n');
/** No text a client shows (streamed pieces, reasoning, its messages) holds the loop's JSON control block. */
function expectProseOnly(events: AnyEvent[], client: HttpAgent): void {
  const streamed = [...ofType(events, EventType.TEXT_MESSAGE_CONTENT), ...ofType(events, EventType.REASONING_MESSAGE_CONTENT)].map((event) =>
    String(event.delta),
  );
  const shown = client.messages.map((message) => (typeof message.content === 'string' ? message.content : ''));
  for (const text of [...streamed, ...shown]) expect(text).not.toMatch(/```|"(?:plan|should_continue|final_answer|tools_to_consider|finish)"\s*:/);
}
/** The same thread and messages in a client that keeps no interrupts (as chat UIs that render none do). */
const withoutInterrupts = (client: HttpAgent, url = `${server.url}/api/ag-ui`) =>
  new HttpAgent({ url, threadId: client.threadId, initialMessages: structuredClone(client.messages) });
const stepNames = (events: AnyEvent[]) => ofType(events, EventType.STEP_STARTED).map((event) => String(event.stepName));

describe('AG-UI: every strategy’s demo, streamed to a standard client', () => {
  it.each([
    ['roa', /^step 1$/],
    ['plan_execute', /^plan step 1$/],
    ['autonomous', /^step 1$/],
    ['solver', /^approach_proposer · loop 1$/],
  ])('%s answers the chain with 29 in a well-formed stream', async (strategy, firstStep) => {
    const client = agent();
    const events = await ask(client, CHAIN, { strategy });
    expect(events[0]!.type).toBe(EventType.RUN_STARTED);
    const end = finished(events);
    expect(end.type).toBe(EventType.RUN_FINISHED);
    expect(end.outcome).toEqual({ type: 'success' });
    expect(end.result).toMatchObject({ status: 'completed' });
    expect(stepNames(events).some((name) => firstStep.test(name))).toBe(true);
    expect(ofType(events, EventType.STEP_FINISHED)).toHaveLength(ofType(events, EventType.STEP_STARTED).length);
    const calls = ofType(events, EventType.TOOL_CALL_START);
    expect(calls.some((event) => event.toolCallName === 'calculator')).toBe(true);
    expect(ofType(events, EventType.TOOL_CALL_RESULT).length).toBeGreaterThanOrEqual(calls.length);
    expect(assistantText(client)).toMatch(/\b29\b/);
    // The strategy's own state reaches the client as AG-UI state.
    expect(client.state).toMatchObject({ strategy, status: 'completed' });
    if (strategy === 'plan_execute')
      expect((client.state as { plan: { steps: { status: string }[] } }).plan.steps.every((step) => step.status === 'done')).toBe(true);
    if (strategy === 'solver') expect(client.state).toMatchObject({ stage: { status: 'done' } });
    expect(ofType(events, EventType.CUSTOM).map((event) => event.name)).toContain('stepwise.agent_start');
    expectProseOnly(events, client);
  });

  it('research streams its task graph as state and each task as a step', async () => {
    const client = agent();
    const events = await ask(client, 'What is the boiling point of water at sea level in Celsius?', { strategy: 'research' });
    const end = finished(events);
    expect(end.type).toBe(EventType.RUN_FINISHED);
    expect(['success', 'interrupt']).toContain(end.outcome?.type);
    expect(stepNames(events).some((name) => /^task \d/.test(name))).toBe(true);
    const graph = (client.state as { task_graph?: { stages: unknown[] } }).task_graph;
    expect(graph?.stages.length).toBeGreaterThan(0);
    expectProseOnly(events, client);
  });

  it('reasoning arrives as REASONING_* events, and the model’s usage on RUN_FINISHED', async () => {
    const llm = await ScriptedLlmServer.start();
    const real = await startStepwiseWithModel(llm.url, { LLM_MODEL: 'gpt-4o-mini' });
    try {
      llm.enqueue(
        {
          text: reasonText('Nothing to look up.', { finish: true }),
          usage: { prompt_tokens: 1_000, completion_tokens: 200, cached_tokens: 400, reasoning_tokens: 50 },
        },
        { text: observeText('Done.', { final_answer: 'Hello there.' }), usage: { prompt_tokens: 2_000, completion_tokens: 100 } },
      );
      const client = new HttpAgent({ url: `${real.url}/api/ag-ui`, threadId: randomUUID() });
      const events = await ask(client, 'Hello');
      expect(
        ofType(events, EventType.REASONING_MESSAGE_CONTENT)
          .map((event) => event.delta)
          .join(''),
      ).toContain('Nothing to look up.');
      expect(ofType(events, EventType.REASONING_START)).toHaveLength(ofType(events, EventType.REASONING_END).length);
      expectProseOnly(events, client);
      expect(assistantText(client)).toContain('Hello there.');
      expect(finished(events).usage).toEqual([
        { model: 'gpt-4o-mini', inputTokens: 3_000, outputTokens: 300, totalTokens: 3_300, cachedInputTokens: 400, reasoningTokens: 50 },
      ]);
    } finally {
      await closeAll(
        () => real.close(),
        () => llm.close(),
      );
    }
  });
});

describe('AG-UI: questions are interrupts, answered by resume', () => {
  it('a vague request ends the AG-UI run with an interrupt; resume answers it and streams the rest', async () => {
    const threadId = randomUUID();
    const client = agent(threadId);
    const first = await ask(client, 'help me');
    const end = finished(first);
    expect(end.outcome?.type).toBe('interrupt');
    const [interrupt] = end.outcome!.interrupts!;
    expect(interrupt).toMatchObject({ reason: 'input_required', responseSchema: { type: 'string' } });
    expect(interrupt!.message).toMatch(/\?/);
    expect(client.pendingInterrupts.map((pending) => pending.id)).toEqual([interrupt!.id]);

    const rest = await run(client, { resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: 'please work out 2^10' }] });
    expect(rest[0]!.type).toBe(EventType.RUN_STARTED);
    expect(finished(rest).outcome).toEqual({ type: 'success' });
    const results = ofType(rest, EventType.TOOL_CALL_RESULT).map((event) => String(event.content));
    expect(results).toContain('1024');
    expect(assistantText(client)).toMatch(/1024/);
    // The thread is the Stepwise chat: its history holds the run.
    const detail = (await (await fetch(`${server.url}/api/sessions/${threadId}`)).json()) as { runs: { status: string }[] };
    expect(detail.runs.at(-1)!.status).toBe('completed');
  });

  it('a tool approval is an interrupt (reason tool_approval, its call and arguments); a resume with the decision answers it', async () => {
    const llm = await ScriptedLlmServer.start();
    const real = await startStepwiseWithModel(llm.url, { LLM_MODEL: 'gpt-4o-mini' });
    try {
      llm.enqueue(...writesHello('Denied.', 'I did not write it.'));
      const client = new HttpAgent({ url: `${real.url}/api/ag-ui`, threadId: randomUUID() });
      const first = await ask(client, 'Write hello to out.txt');
      const [interrupt] = finished(first).outcome!.interrupts!;
      expect(interrupt).toMatchObject({
        reason: 'tool_approval',
        toolCallId: 'w1',
        metadata: { tool: 'write_file', arguments: { name: 'out.txt', content: 'hello' } },
      });
      expect(interrupt!.responseSchema).toMatchObject({ required: ['decision'] });
      const rest = await run(client, { resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: { decision: 'deny', reason: 'not now' } }] });
      expect(finished(rest).outcome).toEqual({ type: 'success' });
      expect(ofType(rest, EventType.TOOL_CALL_RESULT).map((event) => event.content)).toContain(
        JSON.stringify({ error: 'The person denied this call: not now' }),
      );
    } finally {
      await closeAll(
        () => real.close(),
        () => llm.close(),
      );
    }
  });

  it('for a client that renders no interrupts, the question is assistant text and the next user message answers it', async () => {
    const client = agent();
    const first = await ask(client, 'help me');
    const [interrupt] = finished(first).outcome!.interrupts!;
    expect(assistantText(client)).toContain(interrupt!.message);
    const textOnly = withoutInterrupts(client);
    const rest = await ask(textOnly, 'please work out 2^10');
    expect(finished(rest).outcome).toEqual({ type: 'success' });
    expect(ofType(rest, EventType.TOOL_CALL_RESULT).map((event) => String(event.content))).toContain('1024');
    expect(assistantText(textOnly)).toMatch(/1024/);
  });

  it('with ?interrupts=text a question is text only: the AG-UI run ends a success, waiting, and the client holds no interrupt', async () => {
    const client = new HttpAgent({ url: `${server.url}/api/ag-ui?interrupts=text`, threadId: randomUUID() });
    const first = await ask(client, 'help me');
    expect(finished(first).outcome).toEqual({ type: 'success' });
    expect(finished(first).result).toMatchObject({ status: 'waiting' });
    expect(client.pendingInterrupts).toEqual([]);
    expect(assistantText(client)).toMatch(/\?/);
    const rest = await ask(client, 'please work out 2^10');
    expect(finished(rest).result).toMatchObject({ status: 'completed' });
    expect(assistantText(client)).toMatch(/1024/);
  });

  it('an approval in words is decided by a reply of "deny" and its reason', async () => {
    const llm = await ScriptedLlmServer.start();
    const real = await startStepwiseWithModel(llm.url, { LLM_MODEL: 'gpt-4o-mini' });
    try {
      llm.enqueue(...writesHello('Denied.', 'I did not write it.'));
      const client = new HttpAgent({ url: `${real.url}/api/ag-ui`, threadId: randomUUID() });
      await ask(client, 'Write hello to out.txt');
      expect(assistantText(client)).toMatch(/write_file[\s\S]*Reply "approve"/);
      const textOnly = withoutInterrupts(client, `${real.url}/api/ag-ui`);
      const rest = await ask(textOnly, 'deny: not now');
      expect(finished(rest).outcome).toEqual({ type: 'success' });
      expect(ofType(rest, EventType.TOOL_CALL_RESULT).map((event) => event.content)).toContain(
        JSON.stringify({ error: 'The person denied this call: not now' }),
      );
      expectProseOnly(rest, textOnly);
    } finally {
      await closeAll(
        () => real.close(),
        () => llm.close(),
      );
    }
  });

  it('a solver confirmation carries its choices; a cancelled resume stops the run', async () => {
    const client = agent();
    const first = await ask(client, CHAIN, { strategy: 'solver', strategy_options: { auto_advance: false } });
    const [interrupt] = finished(first).outcome!.interrupts!;
    expect(interrupt).toMatchObject({ reason: 'confirmation', responseSchema: { type: 'string', enum: ['Yes', 'No'] } });
    const rest = await run(client, { resume: [{ interruptId: interrupt!.id, status: 'cancelled' }] });
    expect(finished(rest).outcome).toEqual({ type: 'cancelled' });
    expect(client.state).toMatchObject({ status: 'stopped', ending: 'user' });
  });

  it('an answer outside the choices is refused (400) and the question still waits', async () => {
    const client = agent();
    const first = await ask(client, CHAIN, { strategy: 'solver', strategy_options: { auto_advance: false } });
    const [interrupt] = finished(first).outcome!.interrupts!;
    const refused = await post({
      threadId: client.threadId,
      runId: randomUUID(),
      messages: [],
      resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: 'Maybe' }],
    });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.code).toBe('invalid_answer');
    const rest = await run(client, { resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: 'Yes' }] });
    expect(['interrupt', 'success']).toContain(finished(rest).outcome?.type);
  });
});

function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/api/ag-ui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

describe('AG-UI: bad input and the stream’s life', () => {
  it('refuses a malformed input with a typed 400 and starts nothing', async () => {
    const noThread = await post({ runId: 'r', messages: [] });
    expect(noThread.status).toBe(400);
    expect((await noThread.json()).error).toMatchObject({ code: 'bad_request', message: expect.stringMatching(/threadId/) });
    const badThread = await post({ threadId: 'not-a-uuid', runId: 'r', messages: [{ id: '1', role: 'user', content: 'hi' }] });
    expect(badThread.status).toBe(400);
    expect((await badThread.json()).error.code).toBe('invalid_id');
    const noUser = await post({ threadId: randomUUID(), runId: 'r', messages: [] });
    expect((await noUser.json()).error.message).toMatch(/no user message/);
    const badProps = await post({
      threadId: randomUUID(),
      runId: 'r',
      messages: [{ id: '1', role: 'user', content: 'hi' }],
      forwardedProps: { max_steps: 'many' },
    });
    expect((await badProps.json()).error.message).toMatch(/forwardedProps\.max_steps/);
    const unknownStrategy = await post({
      threadId: randomUUID(),
      runId: 'r',
      messages: [{ id: '1', role: 'user', content: 'hi' }],
      forwardedProps: { strategy: 'nope' },
    });
    expect(unknownStrategy.status).toBe(400);
    expect((await unknownStrategy.json()).error.code).toBe('unknown_strategy');
    const noQuestion = await post({ threadId: randomUUID(), runId: 'r', messages: [], resume: [{ interruptId: 'q', status: 'resolved', payload: 'x' }] });
    expect(noQuestion.status).toBe(409);
    expect((await noQuestion.json()).error.code).toBe('no_pending_input');
  });
});

describe('AG-UI: a dropped stream and an explicit stop', () => {
  let slow: TestServer;
  beforeAll(async () => {
    slow = await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '10' });
  });
  afterAll(async () => {
    await slow?.close();
  });

  const runs = async (threadId: string) =>
    ((await (await fetch(`${slow.url}/api/sessions/${threadId}`)).json()) as { runs?: { status: string; end_reason?: string }[] }).runs ?? [];

  it('closing the stream leaves the run going to its answer', async () => {
    const threadId = randomUUID();
    const abort = new AbortController();
    const response = await fetch(`${slow.url}/api/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ threadId, runId: 'r1', messages: [{ id: '1', role: 'user', content: CHAIN }] }),
      signal: abort.signal,
    });
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('RUN_STARTED');
    abort.abort();
    // The run goes on without anyone reading it, to its answer.
    await vi.waitFor(async () => expect((await runs(threadId)).at(-1)?.status).toBe('completed'), { timeout: 120_000, interval: 50 });
  });

  it('a POST to a thread whose run goes is 409 without forwardedProps.delivery; with delivery queue it waits and runs next', async () => {
    const threadId = randomUUID();
    const postTo = (content: string, forwardedProps: Record<string, unknown> = {}) =>
      fetch(`${slow.url}/api/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ threadId, runId: randomUUID(), messages: [{ id: randomUUID(), role: 'user', content }], forwardedProps }),
      });
    const first = await postTo(CHAIN);
    const reader = first.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('RUN_STARTED');
    const refused = await postTo('What is 2+2?');
    expect(refused.status).toBe(409);
    expect((await refused.json()).error.code).toBe('run_active');
    const queued = await postTo('What is 2+2?', { delivery: 'queue' });
    expect(queued.status).toBe(200);
    await queued.body?.cancel();
    await reader.cancel();
    // The queued message runs once the first run has ended.
    await vi.waitFor(async () => expect((await runs(threadId)).map((run) => run.status)).toEqual(['completed', 'completed']), {
      timeout: 120_000,
      interval: 50,
    });
  });

  it('POST /api/sessions/:id/stop stops the run, and its stream ends cancelled', async () => {
    const client = new HttpAgent({ url: `${slow.url}/api/ag-ui`, threadId: randomUUID() });
    client.addMessage({ id: randomUUID(), role: 'user', content: CHAIN });
    const events: AnyEvent[] = [];
    let stopped: Promise<Response> | undefined;
    await client.runAgent(
      { forwardedProps: { strategy: 'plan_execute' } },
      {
        onEvent: ({ event }) => {
          events.push(event as AnyEvent);
          if (!stopped && event.type === EventType.STEP_STARTED) stopped = fetch(`${slow.url}/api/sessions/${client.threadId}/stop`, { method: 'POST' });
        },
      },
    );
    expect((await stopped!).status).toBe(202);
    expect(finished(events).outcome).toEqual({ type: 'cancelled' });
    const again = await fetch(`${slow.url}/api/sessions/${client.threadId}/stop`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect((await again.json()).error.code).toBe('no_active_run');
  });
});
