import { configFromEnv, DemoLlmClient, exampleStrategy, type LlmClient, type Logger, OpenAiLlmClient, STRATEGIES } from '@stepwise/backend';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const Points = z.object({ points: z.array(z.string()).min(1) });
const calculator = {
  name: 'calculator',
  description: 'Evaluates arithmetic',
  parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
};

/** What every model adapter must do, whatever it talks to. */
function contract(name: string, make: () => { llm: LlmClient; script?: (purpose: string) => void; received?: () => Promise<unknown> }) {
  describe(`the LlmClient contract: ${name}`, () => {
    it('answers with text, streamed in deltas that add up to it', async () => {
      const { llm, script } = make();
      script?.('chat');
      const deltas: string[] = [];
      const result = await llm.complete({
        purpose: 'chat',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hello' },
        ],
        signal: new AbortController().signal,
        onDelta: (delta) => deltas.push(delta),
      });
      expect(result.text.length).toBeGreaterThan(0);
      expect(deltas.join('')).toBe(result.text);
      expect(result.toolCalls).toEqual([]);
    });

    it('returns tool calls with ids, names and JSON arguments when tools are offered', async () => {
      const { llm, script } = make();
      script?.('roa.act');
      const result = await llm.complete({
        purpose: 'roa.act',
        messages: [
          { role: 'system', content: 'Act.' },
          { role: 'user', content: 'What is 2+3?' },
        ],
        tools: [calculator],
        variables: { tool_names: ['calculator'] },
        signal: new AbortController().signal,
      });
      expect(result.toolCalls).toHaveLength(1);
      expect(result.toolCalls[0]).toMatchObject({ id: expect.any(String), name: 'calculator' });
      expect(JSON.parse(result.toolCalls[0]!.arguments)).toMatchObject({ expression: expect.stringContaining('2') });
    });

    it('returns data asked for with a schema, parsed and validated', async () => {
      const { llm, script } = make();
      script?.('example.points');
      const result = await llm.complete({
        purpose: 'example.points',
        schema: { name: 'points', zod: Points },
        messages: [
          { role: 'system', content: 'List points.' },
          { role: 'user', content: 'Should we move?' },
        ],
        signal: new AbortController().signal,
      });
      expect(Points.parse(result.parsed).points.length).toBeGreaterThan(0);
    });

    it('rejects at once with the abort reason when the signal is aborted mid-call', async () => {
      const { llm, script, received } = make();
      script?.('hang');
      const controller = new AbortController();
      const call = llm.complete({ purpose: 'chat', messages: [{ role: 'user', content: 'Wait' }], signal: controller.signal });
      await received?.();
      controller.abort(new DOMException('Stopped', 'AbortError'));
      await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    });
  });
}

let server: ScriptedLlmServer;
beforeAll(async () => {
  server = await ScriptedLlmServer.start();
});
afterAll(async () => {
  await server.close();
});

contract('the openai adapter against an OpenAI-compatible server', () => {
  const config = configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'k', LLM_RETRY_BASE_MS: '1' });
  const index = server.requests.length;
  return {
    llm: new OpenAiLlmClient(config, silent),
    received: () => server.waitFor((request) => request.index === index),
    script: (purpose) => {
      if (purpose === 'chat') server.enqueue({ text: 'Hello there, friend.' });
      if (purpose === 'roa.act') server.enqueue({ toolCalls: [{ name: 'calculator', arguments: { expression: '2+3' } }] });
      if (purpose === 'example.points') server.enqueue({ text: '{"points":["cost","speed"]}' });
      if (purpose === 'hang') server.enqueue({ hang: true });
    },
  };
});

contract('the demo model', () => {
  const config = configFromEnv({ DEMO_DELAY_MS: '1' });
  const responders = new Map([...STRATEGIES, exampleStrategy].map((strategy) => [strategy.name, strategy.demo]));
  return { llm: new DemoLlmClient(config, responders) };
});

describe('the openai adapter on the wire', () => {
  it('sends X-Stepwise-Purpose, X-Stepwise-Run-Id and X-Stepwise-Node', async () => {
    const config = configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'k' });
    server.enqueue({ text: 'ok' });
    const before = server.requests.length;
    await new OpenAiLlmClient(config, silent).complete({
      purpose: 'research.task',
      runId: 'run-7',
      nodeId: '1.2',
      messages: [{ role: 'user', content: 'Go' }],
      signal: new AbortController().signal,
    });
    expect(server.requests[before]).toMatchObject({ purpose: 'research.task', runId: 'run-7', node: '1.2' });
  });
});
