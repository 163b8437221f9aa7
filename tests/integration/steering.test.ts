import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeText, reasonText, type RecordedRequest, type ScriptedReply, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { gate } from '../helpers/steer.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;
const open = closeAfterEach();

beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
  llm.respond(respondByQuestion);
  server = await startStepwiseWithModel(llm.url, { STEER_QUEUE_MAX: '2', STEER_MAX_CHARS: '200' });
});
afterAll(async () => {
  await server?.close();
  await llm?.close();
});
async function connect(): Promise<TestClient> {
  return open(await TestClient.connect(server.wsUrl));
}

/** How many of a request's messages hold `text`. */
function holding(request: RecordedRequest, text: string): number {
  return request.body.messages.filter((message) => (message.content ?? '').includes(text)).length;
}

/** Each test's script, by its question: a request goes to the script of the latest question it holds. */
const scripts = new Map<string, (request: RecordedRequest, results: number) => ScriptedReply>();

function respondByQuestion(request: RecordedRequest): ScriptedReply {
  const users = request.body.messages.filter((message) => message.role === 'user').reverse();
  const question = users.map((message) => message.content ?? '').find((content) => scripts.has(content));
  const results = request.body.messages.filter((message) => message.role === 'tool').length;
  return question === undefined ? { text: 'No script.' } : scripts.get(question)!(request, results);
}

/**
 * A two-step roa run for this question: step 1 adds with the calculator, step 2 answers. The
 * first reason call waits for `held` when given.
 */
function twoSteps(question: string, held?: Promise<void>): void {
  let reasons = 0;
  scripts.set(question, (request, results) => {
    if (request.phase === 'reason') return { text: reasonText(results ? 'Answer now.' : 'Add them.'), ...(reasons++ === 0 && held ? { after: held } : {}) };
    if (request.phase === 'act') return results ? { text: 'Done.' } : { toolCalls: [{ id: 'add', name: 'calculator', arguments: { expression: '2+3' } }] };
    return results ? { text: observeText('It is 5.', { final_answer: 'It is 5.', should_continue: false }) } : { text: observeText('Going on.') };
  });
}

/** Waits until the client has seen `count` response_complete events. */
async function completions(client: TestClient, count: number): Promise<void> {
  let from = 0;
  for (let seen = 0; seen < count; seen++) from = client.events.indexOf(await client.waitFor('response_complete', { from })) + 1;
}

function since(from: number): RecordedRequest[] {
  return llm.requests.slice(from);
}

/**
 * A new client asks `question` of a two-step run (twoSteps) whose first reason call waits for
 * `held`; resolves once that call is at the model, with the index of the run's first request.
 */
async function heldRun(question: string): Promise<{ client: TestClient; from: number; held: ReturnType<typeof gate> }> {
  const client = await connect();
  const from = llm.requests.length;
  const held = gate();
  twoSteps(question, held.promise);
  client.chat(question, { agent_mode: true, tools: ['calculator'] });
  await llm.waitFor((request) => request.index >= from && request.phase === 'reason');
  return { client, from, held };
}

describe('a message sent during a run (steer)', () => {
  it('is stored and acknowledged, reaches exactly the next model request, and no later request twice', async () => {
    const { client, from, held } = await heldRun('What is 2+3? (steer)');
    client.chat('Please show your working.');
    const queued = await client.waitFor('message_queued');
    expect(queued).toMatchObject({ delivery: 'steer', position: 1, content: 'Please show your working.' });
    held.open();
    const events = await client.untilComplete();
    const requests = since(from);
    // The reason call in flight when it came did not have it; the next call (act) did, and each later one once.
    expect(requests.map((request) => [request.phase, holding(request, 'Please show your working.')])).toEqual([
      ['reason', 0],
      ['act', 1],
      ['observe', 1],
    ]);
    const steer = events.find((event) => event.update_type === 'agent_steer');
    expect(steer).toMatchObject({ message_id: queued.message_id, step: 1, delivery: 'steer', content: 'Please show your working.' });
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });

  it('withdrawn with cancel_message, never reaches the model', async () => {
    const { client, from, held } = await heldRun('What is 2+3? (cancel)');
    client.chat('Never mind this.');
    const queued = await client.waitFor('message_queued');
    client.send({ type: 'cancel_message', message_id: queued.message_id });
    expect(await client.waitFor('message_cancelled')).toMatchObject({ message_id: queued.message_id });
    held.open();
    const events = await client.untilComplete();
    expect(since(from).every((request) => holding(request, 'Never mind this.') === 0)).toBe(true);
    expect(events.some((event) => event.update_type === 'agent_steer')).toBe(false);
    // Read or gone, it cannot be withdrawn again.
    client.send({ type: 'cancel_message', message_id: queued.message_id });
    expect(await client.next((event) => event.type === 'error')).toMatchObject({ code: 'unknown_message' });
  });

  it('over the limits answers queue_full or message_too_long and leaves the run alone', async () => {
    const { client, from, held } = await heldRun('What is 2+3? (limits)');
    client.chat('x'.repeat(201));
    expect(await client.next((event) => event.type === 'error')).toMatchObject({ code: 'message_too_long' });
    client.chat('First.');
    client.chat('Second.');
    await client.next((event) => event.type === 'message_queued' && event.position === 2);
    client.chat('Third.');
    expect(await client.next((event) => event.type === 'error' && event.code !== 'message_too_long')).toMatchObject({ code: 'queue_full' });
    held.open();
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    const act = since(from).find((request) => request.phase === 'act')!;
    expect([holding(act, 'First.'), holding(act, 'Second.'), holding(act, 'Third.')]).toEqual([1, 1, 0]);
  });
});

describe('delivery queue', () => {
  it('starts the next run when this one ends, in order', async () => {
    const client = await connect();
    const from = llm.requests.length;
    const held = gate();
    scripts.set('First question', () => ({ text: 'First answer.', after: held.promise }));
    for (const question of ['Second question', 'Third question']) scripts.set(question, () => ({ text: `Answer to: ${question}` }));
    client.chat('First question');
    await llm.waitFor((request) => request.index >= from);
    // A plain chat answer takes no steers: the messages wait for it to end.
    client.chat('Second question');
    client.chat('Third question');
    const acks = [await client.waitFor('message_queued'), await client.next((event) => event.type === 'message_queued' && event.position === 2)];
    expect(acks.map((ack) => ack.delivery)).toEqual(['queue', 'queue']);
    held.open();
    await completions(client, 3);
    const answers = client.events.filter((event) => event.type === 'assistant_message').map((event) => event.content);
    expect(answers).toEqual(['First answer.', 'Answer to: Second question', 'Answer to: Third question']);
  });

  it('an agent run queued with delivery queue starts with the message named on agent_start', async () => {
    const { client, from, held } = await heldRun('What is 2+3? (queue)');
    client.chat('What is 2+3? (queued run)', { agent_mode: true, tools: ['calculator'], delivery: 'queue' });
    const queued = await client.waitFor('message_queued');
    expect(queued).toMatchObject({ delivery: 'queue' });
    twoSteps('What is 2+3? (queued run)');
    held.open();
    await completions(client, 2);
    const starts = client.events.filter((event) => event.update_type === 'agent_start');
    expect(starts[1]).toMatchObject({ message_id: queued.message_id, question: 'What is 2+3? (queued run)' });
    // The first run never read the queued message.
    const firstRun = since(from).filter((request) => request.runId === starts[0]!.run_id);
    expect(firstRun.length).toBeGreaterThan(0);
    expect(firstRun.every((request) => holding(request, '(queued run)') === 0)).toBe(true);
  });
});

describe('delivery interrupt', () => {
  it('closes the model request in flight, and the next request holds the message', async () => {
    const client = await connect();
    const from = llm.requests.length;
    scripts.set('What is 2+3? (interrupt)', (request) => {
      if (request.phase === 'reason' && holding(request, 'Stop and use 4+4 instead.') === 0)
        return { text: 'Thinking at length ', endless: true, chunkDelayMs: 5 };
      if (request.phase === 'reason') return { text: reasonText('Use 4+4.') };
      if (request.phase === 'act') return { text: 'No tools needed.' };
      return { text: observeText('It is 8.', { final_answer: 'It is 8.', should_continue: false }) };
    });
    client.chat('What is 2+3? (interrupt)', { agent_mode: true, tools: ['calculator'] });
    const streaming = await llm.waitFor((request) => request.index >= from && request.phase === 'reason');
    await client.waitFor('agent_reason_delta');
    client.chat('Stop and use 4+4 instead.', { delivery: 'interrupt' });
    await llm.waitForAbort(streaming);
    const events = await client.untilComplete();
    const again = since(from).filter((request) => request.phase === 'reason');
    expect(again).toHaveLength(2);
    expect(holding(again[1]!, 'Stop and use 4+4 instead.')).toBe(1);
    // The words of the cut call stay as the model's.
    const cut = again[1]!.body.messages.find((message) => message.role === 'assistant')?.content ?? '';
    expect(cut).toMatch(/^Thinking/);
    expect(events.find((event) => event.update_type === 'agent_steer')).toMatchObject({ delivery: 'interrupt', interrupted: true, step: 1, partial: cut });
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });
});

describe('on the demo model', () => {
  it('a steer read during a run does not replace the request: the demo still computes its answer', async () => {
    const demo = open(await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '5' }));
    const client = open(await TestClient.connect(demo.wsUrl));
    client.chat('What is 15% of 240, then add 7?', { agent_mode: true });
    await client.waitFor('agent_turn_start');
    client.chat('Show the working too.');
    await client.waitFor('message_queued');
    const events = await client.untilComplete();
    expect(events.some((event) => event.update_type === 'agent_steer')).toBe(true);
    expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'answered' });
    expect(String(events.findLast((event) => event.type === 'assistant_message')?.content)).toMatch(/\b43\b/);
  });
});
