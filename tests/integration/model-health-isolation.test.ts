// One session's unusable model output stays in that session: it neither reaches nor alarms the others.
import { describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwiseWithModel } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

const open = closeAfterEach();

describe('model_health', () => {
  it('does not carry another session’s model output (nor flip the endpoint to failing for one bad reply)', async () => {
    const llm = await ScriptedLlmServer.start();
    open(llm);
    llm.respond((request) => (request.phase.endsWith('.plan') ? { text: '{"plan": TOPSECRET-12345 }' } : { text: 'x' }));
    const server = await startStepwiseWithModel(llm.url, { LLM_STRUCTURED_OUTPUT: 'false' });
    open(server);
    const alice = await TestClient.connect(server.wsUrl);
    open(alice);
    const bob = await TestClient.connect(server.wsUrl);
    open(bob);
    alice.chat('secret task', { agent_mode: true, strategy: 'plan_execute', tools: ['calculator'] });
    await alice.untilComplete({ timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const health = bob.events.filter((event) => event.type === 'model_health');
    console.log('bob got:', JSON.stringify(health));
    expect(JSON.stringify(health)).not.toContain('TOPSECRET');
  });
});
