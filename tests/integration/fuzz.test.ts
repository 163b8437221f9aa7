import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient, stepOf } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;

beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
  // The bystander's run is slow and uses a tool; anything else gets a quick one-step answer.
  llm.respond((request) => {
    const bystander = request.body.messages.some((message) => message.content === 'Bystander task');
    if (!bystander) return { text: request.phase === 'observe' ? observeText('Done.', { final_answer: 'Fine.' }) : 'Fine.' };
    if (request.phase === 'reason') return { text: reasonText('Compute slowly.'), delayMs: 250 };
    if (request.phase === 'act') return { toolCalls: [{ id: `calc_${request.index}`, name: 'calculator', arguments: { expression: '6*7' } }], delayMs: 250 };
    return { text: observeText('Keep going.'), delayMs: 250 };
  });
  server = await startStepwiseWithModel(llm.url, { MAX_MESSAGES_PER_SECOND: '100000', AGENT_MAX_STEPS_LIMIT: '3' });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await llm?.close();
});

const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }));
const anyValue = fc.jsonValue({ maxDepth: 4 });
const messageType = fc.oneof(fc.constantFrom('chat', 'agent_control', 'agent_user_input'), fc.string({ maxLength: 20 }));

/** A client frame: mostly malformed, sometimes valid, sometimes huge, deep, or binary. */
const frame: fc.Arbitrary<{ text: string } | { binary: Uint8Array }> = fc.oneof(
  { weight: 3, arbitrary: anyText.map((text) => ({ text })) },
  { weight: 3, arbitrary: anyValue.map((value) => ({ text: JSON.stringify(value) })) },
  {
    weight: 6,
    arbitrary: fc
      .record(
        {
          type: messageType,
          content: fc.oneof(anyText, anyValue),
          agent_mode: fc.oneof(fc.boolean(), anyValue),
          agent_max_steps: fc.oneof(fc.integer(), fc.double(), anyValue),
          tools: fc.oneof(fc.array(fc.constantFrom('calculator', 'current_time', 'nope', '')), anyValue),
          action: fc.oneof(fc.constant('stop'), anyText),
          strategy: fc.oneof(fc.constant('roa'), anyText),
        },
        { requiredKeys: ['type'] },
      )
      .map((message) => ({ text: JSON.stringify(message) })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((depth) => ({ text: '['.repeat(depth) + ']'.repeat(depth) })) },
  { weight: 1, arbitrary: fc.integer({ min: 100_001, max: 900_000 }).map((size) => ({ text: JSON.stringify({ type: 'chat', content: 'x'.repeat(size) }) })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((binary) => ({ binary })) },
);

describe('the server under random and malformed client messages', () => {
  it('answers every frame with an error or a complete response, never crashes, and leaves other sessions alone', async () => {
    const bystander = await TestClient.connect(server.wsUrl);
    bystander.chat('Bystander task', { agent_mode: true, agent_max_steps: 3 });
    await bystander.waitFor('agent_turn_start');

    const fuzzer = await TestClient.connect(server.wsUrl);
    let frames = 0;
    await fc.assert(
      fc.asyncProperty(frame, async (next) => {
        const from = fuzzer.events.length;
        if ('binary' in next) fuzzer.socket.send(next.binary, { binary: true });
        else fuzzer.send(next.text);
        frames++;
        const answer = await fuzzer.next((event) => event.type === 'error' || event.type === 'response_complete', { from, timeoutMs: 10_000 });
        if (answer.type === 'error') {
          expect(typeof answer.code).toBe('string');
          expect(String(answer.message).length).toBeGreaterThan(0);
        }
        expect(fuzzer.closeCode).toBeUndefined();
      }),
      { numRuns: 3_000 },
    );
    expect(frames).toBe(3_000);
    expect(fuzzer.events.filter((event) => event.code === 'internal_error')).toEqual([]);

    const events = await bystander.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events)).toEqual([
      'agent_start',
      ...stepOf(1, 'calculator'),
      ...stepOf(2, 'calculator'),
      ...stepOf(3, 'calculator'),
      'assistant_message',
      'agent_completion:max_steps',
      'response_complete',
    ]);
    expect(bystander.events.filter((event) => event.type === 'error')).toEqual([]);
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
    await fuzzer.close();
    await bystander.close();
  }, 180_000);
});
