import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;
let client: TestClient;

beforeEach(async () => {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, { LLM_MAX_RETRIES: '2', LLM_RETRY_BASE_MS: '5' });
  client = await TestClient.connect(server.wsUrl);
});

afterEach(async () => {
  await client?.close();
  await server?.close();
  await llm?.close();
});

async function expectSessionStillWorks(): Promise<void> {
  const from = client.events.length;
  llm.enqueue({ text: 'Still here.' });
  client.chat('Are you there?');
  expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
}

describe('model endpoint failures', () => {
  it('retries 5xx a bounded number of times, then ends the run with agent_error', async () => {
    llm.enqueue({ status: 500 }, { status: 502 }, { status: 503 });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(llm.requests).toHaveLength(3);
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/answered 503/);
    await expectSessionStillWorks();
  });

  it('recovers from a 429 after waiting as retry-after says', async () => {
    llm.enqueue(
      { status: 429, headers: { 'retry-after-ms': '50' } },
      { text: reasonText('Fine now.', { finish: true }) },
      { text: observeText('ok', { final_answer: 'Recovered.' }) },
    );
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Recovered.');
    expect(llm.requests[1]!.receivedAt - llm.requests[0]!.receivedAt).toBeGreaterThanOrEqual(45);
  });

  it('does not retry a 400 and reports it', async () => {
    llm.enqueue({ status: 400 });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(llm.requests).toHaveLength(1);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/answered 400/);
  });

  it('ends the run cleanly when the stream breaks off after text was shown', async () => {
    llm.enqueue({ text: 'This reply will be cut off in the middle of a sentence', breakAfterChunks: 4, chunkDelayMs: 20 });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(llm.requests).toHaveLength(1);
    await expectSessionStillWorks();
  });

  it('retries a connection cut before any text, and succeeds', async () => {
    llm.enqueue({ text: 'x', breakAfterChunks: 0 }, { text: reasonText('OK.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Fine.' }) });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Fine.');
  });

  it('reports a malformed response as an error, never a crash', async () => {
    llm.respond(() => ({ raw: 'data: {not json}\n\n' }));
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    llm.respond(() => ({ text: 'Back.' }));
    await expectSessionStillWorks();
  });

  it('reports a failed plain chat answer with an error event and response_complete', async () => {
    llm.enqueue({ status: 401 });
    client.chat('Hello');
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['error:model_error', 'response_complete']);
    await expectSessionStillWorks();
  });
});
