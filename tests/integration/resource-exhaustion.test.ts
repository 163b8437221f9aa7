import { afterEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

/**
 * Attacks on the server's resources, scaled down: each is refused or made harmless, and the server
 * still answers everyone else.
 */
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

async function connect(query: Record<string, string | number> = {}, headers: Record<string, string> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl, query, { headers });
  clients.push(client);
  return client;
}

describe('tool names a model makes up', () => {
  it('are counted under one `other` label: /metrics keeps a bounded set of series', async () => {
    llm = await ScriptedLlmServer.start();
    const invented = Array.from({ length: 40 }, (_, index) => `made_up_${index}_${'x'.repeat(2_000)}`);
    llm.respond((request) => {
      if (request.phase === 'act') {
        const done = request.body.messages.some((message) => message.role === 'tool');
        return done
          ? { text: 'No more tools.' }
          : { toolCalls: [...invented.map((name) => ({ name, arguments: {} })), { name: 'calculator', arguments: { expression: '6*7' } }] };
      }
      if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: '42' }) };
      return { text: reasonText('Call everything.') };
    });
    server = await startStepwiseWithModel(llm.url);
    const client = await connect();
    client.chat('Try every tool', { agent_mode: true, tools: ['calculator'] });
    const events = await client.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events).filter((entry) => entry.startsWith('tool_error')).length).toBe(invented.length);

    const body = await (await fetch(`${server.url}/metrics`)).text();
    const tools = new Set([...body.matchAll(/^stepwise_tool_call_duration_seconds_count\{[^}]*tool="([^"]*)"/gm)].map((match) => match[1]));
    expect([...tools].sort()).toEqual(['calculator', 'other']);
    expect(body).toMatch(/stepwise_tool_call_duration_seconds_count\{tool="other",outcome="error"\} 40/);
    expect(body).not.toContain('made_up_');
    // Health still answers.
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
  });
});
