import { describe, expect, it } from 'vitest';
import { writeMcpConfig } from '../fixtures/mcp-servers.ts';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { scriptCalculatorRun } from '../helpers/calculating-model.ts';
import { closeAfterEach, cutting } from '../helpers/per-test.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const TOKEN = 'metrics-test-token-0123456789';
const MODEL = 'gpt-4o-mini';
const SCRAPER = 'scraper-token-abcdefghijklmnop';

let server: TestServer | undefined;
let llm: ScriptedLlmServer | undefined;
const open = closeAfterEach();

async function connect(query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl, query);
  open(cutting(client));
  return client;
}

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Scrapes /metrics and reads one sample: its value, or undefined when it is not there; `all` has every sample. */
async function scrape(headers: Record<string, string> = {}) {
  const response = await fetch(`${server!.url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const samples: Sample[] = [];
  for (const line of (await response.text()).split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key!, value!]));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  const read = (name: string, labels: Record<string, string> = {}): number | undefined =>
    samples.find(
      (sample) =>
        sample.name === name &&
        Object.entries(labels).every(([key, value]) => sample.labels[key] === value) &&
        Object.keys(sample.labels).length === Object.keys(labels).length,
    )?.value;
  return Object.assign(read, { all: samples });
}

describe('GET /metrics (Prometheus)', () => {
  it('counts a finished run by strategy and ending, its model calls by purpose, its tokens and its tool call', async () => {
    llm = open(await ScriptedLlmServer.start());
    scriptCalculatorRun(llm);
    server = open(await startStepwiseWithModel(llm.url, { LLM_MODEL: MODEL }));
    const before = await scrape();
    expect(before('stepwise_runs_active')).toBe(0);
    expect(before('stepwise_model_tokens_total', { kind: 'prompt', model: MODEL })).toBe(0);

    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    const events = await client.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events)).toContain('agent_completion:answered');

    const after = await scrape();
    expect(after('stepwise_runs_total', { strategy: 'roa', ending: 'answered' })).toBe(1);
    for (const purpose of ['roa.reason', 'roa.act', 'roa.observe'])
      expect(after('stepwise_model_call_duration_seconds_count', { purpose, outcome: 'ok', model: MODEL })).toBe(1);
    // 100 + 20 from the act call, the scripted server's 10 + 5 from each of the other two.
    expect(after('stepwise_model_tokens_total', { kind: 'prompt', model: MODEL })).toBe(120);
    expect(after('stepwise_model_tokens_total', { kind: 'completion', model: MODEL })).toBe(30);
    expect(after('stepwise_model_cost_usd_total', { model: MODEL })).toBeGreaterThan(0);
    // The first scrape was an answered request, timed under its route's pattern.
    expect(after('stepwise_http_request_duration_seconds_count', { method: 'GET', route: '/metrics', status: '2xx' })).toBeGreaterThanOrEqual(1);
    expect(after('stepwise_tool_call_duration_seconds_count', { tool: 'calculator', outcome: 'ok' })).toBe(1);
    expect(after('stepwise_ws_connections')).toBe(1);
    expect(after('stepwise_runs_active')).toBe(0);
    // The process's own metrics come along.
    expect(after('process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('shows a run in progress and the question it waits on, then a stopped run', async () => {
    llm = open(await ScriptedLlmServer.start());
    llm.respond((request) =>
      request.phase === 'act' ? { toolCalls: [{ name: 'request_input', arguments: { question: 'Which city?' } }] } : { text: reasonText('Ask.') },
    );
    server = open(await startStepwiseWithModel(llm.url));
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

  it('20 runs whose model invents tool names add no tool series but other; an MCP server that is down reads 0; unknown paths are one route', async () => {
    llm = open(await ScriptedLlmServer.start());
    let invented = 0;
    llm.respond((request) => {
      if (request.phase === 'act') return { toolCalls: [{ name: `invented_tool_${++invented}`, arguments: { x: invented } }] };
      if (request.phase === 'observe') return { text: observeText('No such tool.', { final_answer: 'I could not do it.' }) };
      return { text: reasonText('Use a tool.') };
    });
    server = open(
      await startStepwiseWithModel(llm.url, {
        STEPWISE_CONFIG: writeMcpConfig({ down: { url: 'http://127.0.0.1:9/mcp' } }),
        MCP_STARTUP_WAIT_MS: '0',
      }),
    );
    const client = await connect();
    for (let run = 0; run < 20; run++) {
      const from = client.events.length;
      client.chat(`Try ${run}`, { agent_mode: true, agent_max_steps: 1 });
      await client.untilComplete({ from, timeoutMs: 30_000 });
    }
    expect(invented).toBeGreaterThanOrEqual(20);
    for (const path of ['/no/such/page/1', '/no/such/page/2']) await fetch(`${server.url}${path}`);
    const after = await scrape();
    const tools = new Set(after.all.filter((sample) => sample.name === 'stepwise_tool_call_duration_seconds_count').map((sample) => sample.labels.tool));
    expect([...tools]).toEqual(['other']);
    expect(after('stepwise_mcp_server_up', { server: 'down' })).toBe(0);
    const routes = new Set(after.all.filter((sample) => sample.name === 'stepwise_http_request_duration_seconds_count').map((sample) => sample.labels.route));
    expect([...routes].filter((route) => route?.startsWith('/no/'))).toEqual([]);
  });

  it('needs the access token, or METRICS_TOKEN, which opens /metrics and nothing else', async () => {
    server = open(await startStepwise({ AUTH_TOKEN: TOKEN, METRICS_TOKEN: SCRAPER }));
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    await scrape({ authorization: `Bearer ${SCRAPER}` });
    await scrape({ authorization: `Bearer ${TOKEN}` });
    expect((await fetch(`${server.url}/api/sessions`, { headers: { authorization: `Bearer ${SCRAPER}` } })).status).toBe(401);
  });
});
