import { configFromEnv, type Logger, ModelError, OpenAiLlmClient } from '@stepwise/backend';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

// What local model servers (llama.cpp, Ollama, vLLM) need of a request and do with a reply, on a
// scripted OpenAI-compatible server: a transcript that ends with a user or tool turn, the
// endpoint's own words shown, deterministic failures not retried, tool-call arguments always
// JSON, replies cut at the output limit handled, every reply's tokens counted.

let llm: ScriptedLlmServer;
let server: TestServer | undefined;
let client: TestClient | undefined;

beforeEach(async () => {
  llm = await ScriptedLlmServer.start();
});

afterEach(async () => {
  await client?.close();
  await server?.close();
  await llm.close();
  client = undefined;
  server = undefined;
});

async function connect(env: Record<string, string> = {}): Promise<TestClient> {
  server = await startStepwiseWithModel(llm.url, { LLM_MAX_RETRIES: '3', LLM_RETRY_BASE_MS: '1', ...env });
  client = await TestClient.connect(server.wsUrl);
  return client;
}

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => quiet };

function modelClient(env: Record<string, string> = {}): OpenAiLlmClient {
  return new OpenAiLlmClient(configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', LLM_RETRY_BASE_MS: '1', ...env }), quiet);
}

const Points = z.object({ points: z.array(z.string()).min(1) });
const pointsCall = { purpose: 'example.points', messages: [{ role: 'user' as const, content: 'List points' }], schema: { name: 'points', zod: Points } };

const ended = (events: Record<string, unknown>[]) => events.find((event) => event.update_type === 'agent_completion' || event.update_type === 'agent_error')!;

describe('transcripts local servers accept', () => {
  it('ends every phase request with a user or tool turn, never with the model’s own text', async () => {
    const socket = await connect();
    llm.enqueue(
      { text: reasonText('I will work it out.') },
      { text: 'No tool needed, I think.' },
      { text: observeText('Nothing found yet.', { should_continue: true }) },
      { text: reasonText('Now answer.', { finish: true }) },
      { text: observeText('Done.', { final_answer: 'Forty-two.' }) },
    );
    socket.chat('What is six times seven?', { agent_mode: true, agent_max_steps: 3 });
    const events = await socket.untilComplete();
    expect(ended(events)).toMatchObject({ update_type: 'agent_completion' });
    expect(llm.requests.map((request) => request.purpose)).toEqual(['roa.reason', 'roa.act', 'roa.observe', 'roa.reason', 'roa.observe']);
    for (const request of llm.requests) {
      const roles = request.body.messages.map((message) => message.role);
      expect(['user', 'tool']).toContain(roles.at(-1));
    }
    // The observe request after a step whose act wrote text: the phase's own turn closes it.
    const observe = llm.requests[2]!.body.messages;
    expect(observe.at(-1)!.content).toMatch(/the observe phase/);
  });

  it('sends a tool call whose arguments do not parse back as JSON, and goes on for three more steps', async () => {
    const socket = await connect();
    llm.enqueue(
      { text: reasonText('Compute.') },
      { toolCalls: [{ name: 'calculator', arguments: '{"expression": "2+' }] },
      { text: observeText('The call was malformed.', { should_continue: true }) },
    );
    for (let step = 2; step <= 4; step++) {
      llm.enqueue({ text: reasonText(`Step ${step}.`) }, { text: `Thinking ${step}.` }, { text: observeText(`Step ${step} done.`, { should_continue: true }) });
    }
    llm.enqueue({ text: 'Best answer: unknown.' });
    socket.chat('What is 2+?', { agent_mode: true, agent_max_steps: 4, tools: ['calculator'] });
    const events = await socket.untilComplete();
    expect(ended(events)).toMatchObject({ update_type: 'agent_completion', reason: 'max_steps' });
    const later = llm.requests.slice(3);
    expect(later.length).toBeGreaterThanOrEqual(9);
    for (const request of later) {
      for (const message of request.body.messages) {
        for (const call of (message.tool_calls ?? []) as { function: { arguments: string } }[]) {
          expect(JSON.parse(call.function.arguments)).toEqual({ unparsed_arguments: '{"expression": "2+' });
        }
      }
    }
  });
});

describe('endpoint failures', () => {
  it('shows the endpoint’s own message for a 400, does not retry it, and keeps the model healthy', async () => {
    const socket = await connect();
    llm.enqueue({ status: 400, errorMessage: 'the request exceeds the available context size (4096 tokens)\u0007' });
    socket.chat('Hello', { agent_mode: true });
    const events = await socket.untilComplete();
    expect(llm.requests).toHaveLength(1);
    expect(String(ended(events).message)).toContain('It said: "the request exceeds the available context size (4096 tokens)"');
    expect(socket.events.filter((event) => event.type === 'model_health').map((event) => (event.health as { status: string }).status)).not.toContain('failing');
  });

  it('does not retry a 500 whose words say the request cannot be served, and stops retrying a 500 that says the same twice', async () => {
    const model = modelClient({ LLM_MAX_RETRIES: '3' });
    const signal = new AbortController().signal;
    llm.enqueue({ status: 500, errorMessage: 'Failed to parse tool call arguments as JSON' });
    const deterministic = await model.complete({ purpose: 'chat', messages: [{ role: 'user', content: 'Hi' }], signal }).catch((error: unknown) => error);
    expect(deterministic).toBeInstanceOf(ModelError);
    expect((deterministic as ModelError).category).toBe('request');
    expect(llm.requests).toHaveLength(1);

    llm.enqueue({ status: 500, errorMessage: 'boom' }, { status: 500, errorMessage: 'boom' }, { text: 'never asked for' });
    const repeated = await model.complete({ purpose: 'chat', messages: [{ role: 'user', content: 'Hi' }], signal }).catch((error: unknown) => error);
    expect((repeated as ModelError).message).toContain('It said: "boom"');
    expect(llm.requests).toHaveLength(3);
    // The reply after them was never asked for by that call.
    expect((await model.complete({ purpose: 'chat', messages: [{ role: 'user', content: 'Hi' }], signal })).text).toBe('never asked for');

    // A gateway's or an overloaded server's 503 is retried as before, however often it says the same.
    llm.enqueue(
      { status: 503, errorMessage: 'The engine is currently overloaded' },
      { status: 503, errorMessage: 'The engine is currently overloaded' },
      { text: 'Back.' },
    );
    expect((await model.complete({ purpose: 'chat', messages: [{ role: 'user', content: 'Hi' }], signal })).text).toBe('Back.');
  });

  it('switches a model to alternating turns when its endpoint refuses the turn order, and sends the request again', async () => {
    const model = modelClient();
    const signal = new AbortController().signal;
    llm.enqueue({ status: 500, errorMessage: 'Conversation roles must alternate user/assistant/user/assistant/...' }, { text: 'Fine.' });
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'Hi' },
      { role: 'user' as const, content: 'Again' },
    ];
    expect((await model.complete({ purpose: 'chat', messages, signal })).text).toBe('Fine.');
    expect(llm.requests.map((request) => request.body.messages.map((message) => message.role))).toEqual([
      ['system', 'user', 'user'],
      ['system', 'user'],
    ]);
  });
});

describe('replies cut at the output limit', () => {
  it('asks again for a structured reply cut at the limit with max_tokens, and counts both replies’ tokens', async () => {
    const model = modelClient({ LLM_MAX_OUTPUT_TOKENS: '3000' });
    llm.enqueue(
      { text: '{"points": ["cost", "spe', finishReason: 'length', usage: { prompt_tokens: 10, completion_tokens: 400 } },
      { text: '{"points": ["cost", "speed"]}', usage: { prompt_tokens: 10, completion_tokens: 9 } },
    );
    const result = await model.complete({ ...pointsCall, signal: new AbortController().signal });
    expect(result.parsed).toEqual({ points: ['cost', 'speed'] });
    expect(result.usage).toMatchObject({ promptTokens: 20, completionTokens: 409 });
    expect((llm.requests[0]!.body as { max_tokens?: number }).max_tokens).toBeUndefined();
    expect((llm.requests[1]!.body as { max_tokens?: number }).max_tokens).toBe(3000);
  });

  it('says so plainly when the structured reply is cut again, with both replies’ tokens on the error', async () => {
    const model = modelClient();
    llm.enqueue(
      { text: '{"points": ["co', finishReason: 'length', usage: { prompt_tokens: 10, completion_tokens: 400 } },
      { text: '{"points": ["co', finishReason: 'length', usage: { prompt_tokens: 10, completion_tokens: 400 } },
    );
    const error = (await model.complete({ ...pointsCall, signal: new AbortController().signal }).catch((failure: unknown) => failure)) as ModelError;
    expect(error.message).toMatch(/cut at the model's output limit/);
    expect(error.spent?.usage).toMatchObject({ promptTokens: 20, completionTokens: 800 });
  });

  it('never runs a tool call cut at the limit, and never shows cut text as the answer', async () => {
    const socket = await connect();
    llm.enqueue(
      { text: reasonText('Compute.') },
      { toolCalls: [{ name: 'calculator', arguments: '{"expression": "6*' }], finishReason: 'length' },
      { text: observeText('Done.', { final_answer: 'The answer is 4' }), finishReason: 'length' },
      { text: 'My best answer: 42.' },
    );
    socket.chat('What is 6*7?', { agent_mode: true, agent_max_steps: 1, tools: ['calculator'] });
    const events = await socket.untilComplete();
    expect(events.some((event) => event.type === 'tool_start')).toBe(false);
    expect(ended(events)).toMatchObject({ update_type: 'agent_completion', reason: 'max_steps' });
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('My best answer: 42.');
    const observe = events.find((event) => event.update_type === 'agent_observe')!;
    expect(String(observe.content)).toContain("[The reply was cut at the model's output limit]");
  });
});

describe('spending and budgets', () => {
  it('counts the tokens of replies rejected by validation in the run’s usage', async () => {
    const socket = await connect();
    llm.enqueue(
      { text: '{"steps": []}', usage: { prompt_tokens: 100, completion_tokens: 5 } },
      { text: '{"steps": []}', usage: { prompt_tokens: 120, completion_tokens: 5 } },
    );
    socket.chat('Plan something', { agent_mode: true, strategy: 'plan_execute' });
    const events = await socket.untilComplete();
    const failed = ended(events);
    expect(failed.update_type).toBe('agent_error');
    expect(String(failed.message)).toMatch(/valid plan/);
    const usage = events.filter((event) => event.update_type === 'agent_usage');
    expect(usage.at(-1)).toMatchObject({ usage: { prompt_tokens: 220, completion_tokens: 10 } });
    // An empty plan is refused on the wire schema too: the model is asked again, never answered "in 0 steps".
    expect(llm.requests).toHaveLength(2);
    expect(JSON.stringify((llm.requests[0]!.body as { response_format?: unknown }).response_format)).toContain('"minItems":1');
  });

  it('resumes a run that failed in its first step with the budget it had, unless more steps are asked for', async () => {
    const socket = await connect();
    llm.enqueue({ text: reasonText('Start.') }, { status: 400, errorMessage: 'bad request' });
    socket.chat('Hello', { agent_mode: true, agent_max_steps: 2 });
    const events = await socket.untilComplete();
    const runId = String(ended(events).run_id);
    const from = socket.events.length;
    llm.respond(() => ({ text: observeText('Done.', { final_answer: 'Hi.' }) }));
    socket.send({ type: 'agent_control', action: 'resume', run_id: runId });
    await socket.untilComplete({ from });
    const start = socket.events.slice(from).find((event) => event.update_type === 'agent_start')!;
    expect(start.max_steps).toBe(2);
  });
});
