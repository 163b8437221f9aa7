import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { openSqliteStore, type Store } from '@stepwise/backend';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;
let client: TestClient;

async function start(env: Record<string, string> = {}) {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, env);
  client = await TestClient.connect(server.wsUrl);
}

afterEach(async () => {
  await client?.close();
  await server?.close();
  await llm?.close();
});

const askQuestion = { toolCalls: [{ id: 'ask_1', name: 'request_input', arguments: { question: 'Which city?' } }] };

describe('request_input', () => {
  beforeEach(() => start());

  it('pauses the run, shows the question, and resumes with the answer as the tool result', async () => {
    llm.enqueue({ text: reasonText('The city is missing; ask.') }, askQuestion, {
      text: observeText('The user said Oslo.', { final_answer: 'Weather for Oslo.' }),
    });
    client.chat('What is the weather?', { agent_mode: true });
    const question = await client.waitFor('agent_request_input');
    expect(question).toMatchObject({ question: 'Which city?', step: 1, tool_call_id: 'ask_1' });
    expect(new Date(String(question.deadline)).getTime()).toBeGreaterThan(Date.now());
    // The run is paused: no observe call until the user answers.
    expect(llm.phases()).toEqual(['reason', 'act']);

    client.send({ type: 'agent_user_input', content: 'Oslo' });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual([
      'agent_start',
      'agent_turn_start:1',
      'agent_reason:1',
      'tool_start:request_input',
      'agent_request_input:1',
      'tool_complete:request_input',
      'agent_observe:1',
      'assistant_message',
      'agent_completion:answered',
      'response_complete',
    ]);
    const toolMessage = llm.requests[2]!.body.messages.find((message) => message.role === 'tool');
    expect(toolMessage).toMatchObject({ tool_call_id: 'ask_1', content: 'Oslo' });
  });

  it('refuses an answer when no question is pending', async () => {
    client.send({ type: 'agent_user_input', content: 'hello?' });
    expect(await client.waitFor('error')).toMatchObject({ code: 'no_pending_input' });
  });
});

describe('input timeout', () => {
  beforeEach(() => start({ AGENT_INPUT_TIMEOUT_MS: '150', INPUT_TIMEOUT_ACTION: 'stop' }));

  it('stops the run when nobody answers in time, and the session goes on', async () => {
    llm.enqueue({ text: reasonText('Ask.') }, askQuestion);
    client.chat('Weather?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events).slice(-5)).toEqual([
      'tool_start:request_input',
      'agent_request_input:1',
      'agent_request_input_timeout:1',
      'agent_stopped:input_timeout',
      'response_complete',
    ]);
    expect(llm.phases()).toEqual(['reason', 'act']);

    const from = client.events.length;
    llm.enqueue({ text: 'Hi again.' });
    client.chat('Hello');
    expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
  });
});

describe('stop', () => {
  beforeEach(() => start());

  it('aborts the in-flight model request during the reason call', async () => {
    llm.enqueue({ hang: true });
    client.chat('Think forever', { agent_mode: true });
    const reason = await llm.waitFor((request) => request.phase === 'reason');
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    await llm.waitForAbort(reason);
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_stopped:user', 'response_complete']);
    expect(events.find((event) => event.update_type === 'agent_stopped')!.step).toBe(1);
  });

  it('aborts the in-flight model request during the act call', async () => {
    llm.enqueue({ text: reasonText('Act next.') }, { hang: true });
    client.chat('Act forever', { agent_mode: true });
    const act = await llm.waitFor((request) => request.phase === 'act');
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    await llm.waitForAbort(act);
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_reason:1', 'agent_stopped:user', 'response_complete']);
    expect(llm.phases()).toEqual(['reason', 'act']);
  });

  it('ends a run that waits for an answer, and a new message starts afresh', async () => {
    llm.enqueue({ text: reasonText('Ask.') }, askQuestion);
    client.chat('Weather?', { agent_mode: true });
    await client.waitFor('agent_request_input');
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);

    client.send({ type: 'agent_user_input', content: 'too late' });
    expect(await client.next((event) => event.type === 'error')).toMatchObject({ code: 'no_pending_input' });

    const from = client.events.length;
    llm.enqueue({ text: reasonText('Fine.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Fresh answer.' }) });
    client.chat('Something else', { agent_mode: true });
    const next = await client.untilComplete({ from });
    expect(next.find((event) => event.type === 'assistant_message')!.content).toBe('Fresh answer.');
  });

  it('refuses stop when no run is active', async () => {
    client.send({ type: 'agent_control', action: 'stop' });
    expect(await client.waitFor('error')).toMatchObject({ code: 'no_active_run' });
  });

  it('takes a second chat while a run is active as a message the run reads, without starting another run', async () => {
    llm.enqueue({ text: reasonText('Plan.'), delayMs: 200 }, { text: 'No tool.' }, { text: observeText('ok', { final_answer: 'Done.' }) });
    client.chat('First', { agent_mode: true });
    await client.waitFor('agent_turn_start');
    client.chat('Second');
    expect(await client.waitFor('message_queued')).toMatchObject({ delivery: 'steer', content: 'Second' });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Done.');
    expect(llm.requests).toHaveLength(3);
    expect(llm.requests.map((request) => request.body.messages.some((message) => message.content?.includes('Second')))).toEqual([false, true, true]);
    expect(client.events.some((event) => event.type === 'error')).toBe(false);
  });
});

describe('two sessions', () => {
  beforeEach(() => start());

  it('cannot stop, answer or watch each other’s runs', async () => {
    const other = await TestClient.connect(server.wsUrl);
    try {
      expect(other.session.session_id).not.toBe(client.session.session_id);
      llm.enqueue({ text: reasonText('Ask.') }, askQuestion);
      client.chat('Weather?', { agent_mode: true });
      await client.waitFor('agent_request_input');

      other.send({ type: 'agent_control', action: 'stop' });
      expect(await other.waitFor('error')).toMatchObject({ code: 'no_active_run' });
      other.send({ type: 'agent_user_input', content: 'Oslo' });
      expect(await other.next((event) => event.type === 'error', { from: 2 })).toMatchObject({ code: 'no_pending_input' });

      llm.enqueue({ text: observeText('Bergen it is.', { final_answer: 'Bergen weather.' }) });
      client.send({ type: 'agent_user_input', content: 'Bergen' });
      const events = await client.untilComplete();
      expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Bergen weather.');
      expect(other.events.filter((event) => 'seq' in event)).toEqual([]);
    } finally {
      await other.close();
    }
  });
});

describe('a run that has ended for its clients', () => {
  it('finds no run to stop while the server is still saving its end', async () => {
    const store = await openSqliteStore(':memory:');
    let release: () => void = () => undefined;
    const saving = new Promise<void>((resolve) => (release = resolve));
    let finishing: () => void = () => undefined;
    const finishCalled = new Promise<void>((resolve) => (finishing = resolve));
    // The run's outcome waits at this gate: its ending has reached the client, the run is not done here.
    const gated = Object.create(store) as Store;
    gated.finishRun = async (...args) => {
      finishing();
      await saving;
      return store.finishRun(...args);
    };
    llm = await ScriptedLlmServer.start();
    server = await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key' }, undefined, gated);
    client = await TestClient.connect(server.wsUrl);
    try {
      llm.enqueue({ text: reasonText('Fine.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Done.' }) });
      client.chat('Quick', { agent_mode: true });
      expect(await client.waitFor('agent_completion')).toMatchObject({ reason: 'answered' });
      await finishCalled;
      client.send({ type: 'agent_control', action: 'stop' });
      expect(await client.waitFor('error')).toMatchObject({ code: 'no_active_run' });
    } finally {
      release();
    }
  });
});
