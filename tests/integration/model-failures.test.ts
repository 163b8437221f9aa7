import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise({ LLM_MAX_RETRIES: '2', LLM_RETRY_BASE_MS: '5' }, { eachTest: true });

async function expectSessionStillWorks(): Promise<void> {
  const from = stepwise.client.events.length;
  stepwise.llm.enqueue({ text: 'Still here.' });
  stepwise.client.chat('Are you there?');
  expect(summarize(await stepwise.client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
}

describe('model endpoint failures', () => {
  it('retries 5xx a bounded number of times, then ends the run with agent_error', async () => {
    stepwise.llm.enqueue({ status: 500 }, { status: 502 }, { status: 503 });
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(stepwise.llm.requests).toHaveLength(3);
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/answered 503/);
    await expectSessionStillWorks();
  });

  it('recovers from a 429 after waiting as retry-after says', async () => {
    stepwise.llm.enqueue(
      { status: 429, headers: { 'retry-after-ms': '50' } },
      { text: reasonText('Fine now.', { finish: true }) },
      { text: observeText('ok', { final_answer: 'Recovered.' }) },
    );
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Recovered.');
    expect(stepwise.llm.requests[1]!.receivedAt - stepwise.llm.requests[0]!.receivedAt).toBeGreaterThanOrEqual(45);
  });

  it('does not retry a 400 and reports it', async () => {
    stepwise.llm.enqueue({ status: 400 });
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(stepwise.llm.requests).toHaveLength(1);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/answered 400/);
  });

  it('ends the run cleanly when the stream breaks off after text was shown', async () => {
    stepwise.llm.enqueue({ text: 'This reply will be cut off in the middle of a sentence', breakAfterChunks: 4, chunkDelayMs: 20 });
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(stepwise.llm.requests).toHaveLength(1);
    await expectSessionStillWorks();
  });

  it('retries a connection cut before any text, and succeeds', async () => {
    stepwise.llm.enqueue(
      { text: 'x', breakAfterChunks: 0 },
      { text: reasonText('OK.', { finish: true }) },
      { text: observeText('ok', { final_answer: 'Fine.' }) },
    );
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Fine.');
  });

  it('reports a malformed response as an error, never a crash', async () => {
    stepwise.llm.respond(() => ({ raw: 'data: {not json}\n\n' }));
    stepwise.client.chat('Hello', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    stepwise.llm.respond(() => ({ text: 'Back.' }));
    await expectSessionStillWorks();
  });

  it('reports a failed plain chat answer with an error event and response_complete', async () => {
    stepwise.llm.enqueue({ status: 401 });
    stepwise.client.chat('Hello');
    const events = await stepwise.client.untilComplete();
    expect(summarize(events)).toEqual(['error:model_error', 'response_complete']);
    await expectSessionStillWorks();
  });
});
