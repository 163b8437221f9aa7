import { afterEach, describe, expect, it } from 'vitest';
import { reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { scriptCalculatorRun } from '../helpers/calculating-model.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const TOKEN = 'metrics-test-token-0123456789';
const SCRAPER = 'scraper-token-abcdefghijklmnop';

let server: TestServer | undefined;
let llm: ScriptedLlmServer | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.terminate();
  await server?.close();
  server = undefined;
  await llm?.close();
  llm = undefined;
});

async function connect(query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl, query);
  clients.push(client);
  return client;
}

/** Scrapes /metrics and reads one sample: its value, or undefined when it is not there. */
async function scrape(headers: Record<string, string> = {}): Promise<(name: string, labels?: Record<string, string>) => number | undefined> {
  const response = await fetch(`${server!.url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return (name, labels = {}) => {
    for (const line of text.split('\n')) {
      const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
      if (!match || match[1] !== name) continue;
      const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value]));
      if (Object.entries(labels).every(([key, value]) => found[key] === value) && Object.keys(found).length === Object.keys(labels).length)
        return Number(match[3]);
    }
    return undefined;
  };
}

describe('GET /metrics (Prometheus)', () => {
  it('counts a finished run by strategy and ending, its model calls by purpose, its tokens and its tool call', async () => {
    llm = await ScriptedLlmServer.start();
    scriptCalculatorRun(llm);
    server = await startStepwiseWithModel(llm.url);
    const before = await scrape();
    expect(before('stepwise_runs_active')).toBe(0);
    expect(before('stepwise_model_tokens_total', { kind: 'prompt' })).toBe(0);

    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    const events = await client.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events)).toContain('agent_completion:answered');

    const after = await scrape();
    expect(after('stepwise_runs_total', { strategy: 'roa', ending: 'answered' })).toBe(1);
    expect(after('stepwise_model_call_duration_seconds_count', { purpose: 'roa.reason', outcome: 'ok' })).toBe(1);
    expect(after('stepwise_model_call_duration_seconds_count', { purpose: 'roa.act', outcome: 'ok' })).toBe(1);
    expect(after('stepwise_model_call_duration_seconds_count', { purpose: 'roa.observe', outcome: 'ok' })).toBe(1);
    // 100 + 20 from the act call, the scripted server's 10 + 5 from each of the other two.
    expect(after('stepwise_model_tokens_total', { kind: 'prompt' })).toBe(120);
    expect(after('stepwise_model_tokens_total', { kind: 'completion' })).toBe(30);
    expect(after('stepwise_tool_call_duration_seconds_count', { tool: 'calculator', outcome: 'ok' })).toBe(1);
    expect(after('stepwise_ws_connections')).toBe(1);
    expect(after('stepwise_runs_active')).toBe(0);
    // The process's own metrics come along.
    expect(after('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('shows a run in progress and the question it waits on, then a stopped run', async () => {
    llm = await ScriptedLlmServer.start();
    llm.respond((request) =>
      request.phase === 'act' ? { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' } }] } : { text: reasonText('Ask.') },
    );
    server = await startStepwiseWithModel(llm.url);
    const client = await connect();
    client.chat('Plan my trip', { agent_mode: true });
    await client.waitFor('agent_request_input', { timeoutMs: 30_000 });
    const waiting = await scrape();
    expect(waiting('stepwise_runs_active')).toBe(1);
    expect(waiting('stepwise_questions_waiting')).toBe(1);

    client.send({ type: 'agent_control', action: 'stop' });
    await client.untilComplete({ timeoutMs: 30_000 });
    const stopped = await scrape();
    expect(stopped('stepwise_questions_waiting')).toBe(0);
    expect(stopped('stepwise_runs_total', { strategy: 'roa', ending: 'stopped' })).toBe(1);
  });

  it('needs the access token, or METRICS_TOKEN, which opens /metrics and nothing else', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN, METRICS_TOKEN: SCRAPER });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    await scrape({ authorization: `Bearer ${SCRAPER}` });
    await scrape({ authorization: `Bearer ${TOKEN}` });
    expect((await fetch(`${server.url}/api/sessions`, { headers: { authorization: `Bearer ${SCRAPER}` } })).status).toBe(401);
  });
});
