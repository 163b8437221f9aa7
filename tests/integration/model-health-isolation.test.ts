// One session's unusable model output stays in that session: it neither reaches nor alarms the others.
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe('model_health', () => {
  it('does not carry another session’s model output (nor flip the endpoint to failing for one bad reply)', async () => {
    const llm = await ScriptedLlmServer.start();
    cleanups.push(() => llm.close());
    llm.respond((request) => (request.phase.endsWith('.plan') ? { text: '{"plan": TOPSECRET-12345 }' } : { text: 'x' }));
    const server = await startStepwiseWithModel(llm.url, { LLM_STRUCTURED_OUTPUT: 'false' });
    cleanups.push(() => server.close());
    const alice = await TestClient.connect(server.wsUrl);
    cleanups.push(() => alice.close());
    const bob = await TestClient.connect(server.wsUrl);
    cleanups.push(() => bob.close());
    alice.chat('secret task', { agent_mode: true, strategy: 'plan_execute', tools: ['calculator'] });
    await alice.untilComplete({ timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const health = bob.events.filter((event) => event.type === 'model_health');
    console.log('bob got:', JSON.stringify(health));
    expect(JSON.stringify(health)).not.toContain('TOPSECRET');
  });
});
