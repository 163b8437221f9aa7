import { exampleStrategy, STRATEGIES, TOKENS } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();
const open = stepwise.open;

/** The real server on the scripted model; `withExample` also registers the example strategy. */
async function start(env: Record<string, string> = {}, withExample = false) {
  llm = open(await ScriptedLlmServer.start());
  server = open(await startStepwiseWithModel(llm.url, env));
  if (withExample) {
    await server.close();
    const { startStepwise } = await import('../helpers/stepwise.ts');
    server = open(
      await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', ...env }, (container) =>
        container.register(TOKENS.Strategies, { useValue: [...STRATEGIES, exampleStrategy] }),
      ),
    );
  }
  client = open(await TestClient.connect(server.wsUrl));
  return { llm, server, client };
}

describe('strategies on the wire', () => {
  it('session lists strategy_catalog with each strategy’s options schema; plain chat is not offered', async () => {
    const { client } = await start();
    expect(client.session.strategies).toEqual(['roa', 'plan_execute', 'autonomous', 'solver', 'research']);
    expect(client.session.strategy_catalog).toEqual([
      { name: 'roa', label: 'Reason, act, observe', description: expect.any(String), options_schema: expect.objectContaining({ type: 'object' }) },
      {
        name: 'plan_execute',
        label: 'Plan and execute',
        description: expect.any(String),
        options_schema: expect.objectContaining({
          properties: expect.objectContaining({
            max_step_attempts: expect.objectContaining({ default: 3 }),
            replan: expect.objectContaining({ default: true }),
          }),
        }),
      },
      {
        name: 'autonomous',
        label: 'Autonomous (todo list)',
        description: expect.any(String),
        options_schema: expect.objectContaining({ properties: expect.objectContaining({ workflow_mode: expect.objectContaining({ default: false }) }) }),
      },
      {
        name: 'solver',
        label: 'Staged solver',
        description: expect.any(String),
        options_schema: expect.objectContaining({
          properties: expect.objectContaining({
            approaches: expect.objectContaining({ default: true }),
            auto_advance: expect.objectContaining({ default: true }),
            max_loops: expect.objectContaining({ default: 3 }),
            require_keyword: expect.objectContaining({ default: false }),
          }),
        }),
      },
      {
        name: 'research',
        label: 'Research (task graph)',
        description: expect.any(String),
        options_schema: expect.objectContaining({
          properties: expect.objectContaining({
            mode: expect.objectContaining({ default: 'run' }),
            task_verification: expect.objectContaining({ default: false }),
            max_parallel: expect.objectContaining({ default: 4 }),
          }),
        }),
      },
    ]);
  });

  it('refuses an unknown strategy with unknown_strategy and a bad option with invalid_message naming it; nothing runs', async () => {
    const { client, llm } = await start();
    client.chat('Hi', { agent_mode: true, strategy: 'telepathy' });
    expect(await client.waitFor('error')).toMatchObject({ code: 'unknown_strategy' });
    const from = client.events.length;
    client.chat('Hi', { agent_mode: true, strategy: 'roa', strategy_options: { fast: true } });
    const refused = await client.waitFor('error', { from });
    expect(refused).toMatchObject({ code: 'invalid_message' });
    expect(String(refused.message)).toContain('strategy_options.fast');
    expect(llm.requests).toHaveLength(0);
  });

  it('every model request carries its purpose and the run’s id: chat, roa.reason, roa.act, roa.observe', async () => {
    const { client, llm, server } = await start();
    llm.enqueue({ text: 'Hello there.' });
    client.chat('Hello');
    await client.untilComplete();
    llm.enqueue(
      { text: reasonText('Compute it.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2+2' } }] },
      { text: observeText('Four.', { final_answer: '4', should_continue: false }) },
    );
    const from = client.events.length;
    client.chat('What is 2+2?', { agent_mode: true });
    const events = await client.untilComplete({ from });
    const agentStart = events.find((event) => event.update_type === 'agent_start')!;
    expect(agentStart).toMatchObject({ strategy: 'roa', options: {} });

    expect(llm.requests.map((request) => request.purpose)).toEqual(['chat', 'roa.reason', 'roa.act', 'roa.observe']);
    expect(llm.requests.slice(1).map((request) => request.runId)).toEqual([agentStart.run_id, agentStart.run_id, agentStart.run_id]);
    const detail = (await (await fetch(`${server.url}/api/sessions/${client.session.session_id}`)).json()) as { runs: { id: string; strategy: string }[] };
    const chatRun = detail.runs.find((run) => run.strategy === 'chat')!;
    expect(llm.requests[0]!.runId).toBe(chatRun.id);
    expect(llm.requests.every((request) => request.node === undefined)).toBe(true);
  });

  it('a failed plain chat answer is logged, so a reload still shows it', async () => {
    const { client, llm, server } = await start({ LLM_MAX_RETRIES: '0' });
    llm.enqueue({ status: 401 });
    client.chat('Hello');
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['error:model_error', 'response_complete']);
    const failure = events.find((event) => event.type === 'error')!;
    expect(failure.seq).toEqual(expect.any(Number));
    expect(String(failure.message)).toMatch(/the key was refused; check OPENAI_API_KEY/);
    expect(String(failure.message)).not.toContain('scripted failure');

    const again = await TestClient.connect(server.wsUrl, { session_id: client.session.session_id, after_seq: 0 });
    try {
      await again.next((event) => event.type === 'response_complete');
      expect(again.logged.find((event) => event.type === 'error')).toMatchObject({ code: 'model_error', seq: failure.seq });
    } finally {
      await again.close();
    }
  });

  it('a strategy with branches and data: structured output named by its schema, X-Stepwise-Node, node_id on branch events', async () => {
    const { client, llm } = await start({}, true);
    expect((client.session.strategy_catalog as { name: string }[]).map((entry) => entry.name)).toEqual([
      'roa',
      'plan_execute',
      'autonomous',
      'solver',
      'research',
      'example',
    ]);
    llm.respond((request) =>
      request.purpose === 'example.points' ? { text: JSON.stringify({ points: ['cost', 'speed'] }) } : { text: `On ${request.node}.` },
    );
    client.chat('Should we move?', { agent_mode: true, strategy: 'example', strategy_options: { max_points: 2 } });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')).toMatchObject({ content: '1. On 1.\n2. On 2.' });
    const [points, ...branches] = llm.requests;
    expect(points!.body).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'points', strict: true, schema: expect.objectContaining({ type: 'object' }) } },
    });
    expect(branches.map((request) => [request.purpose, request.node])).toEqual([
      ['example.point', '1'],
      ['example.point', '2'],
    ]);
    expect(events.filter((event) => event.update_type === 'agent_reason').map((event) => event.node_id)).toEqual(['1', '2']);
  });

  it('with LLM_STRUCTURED_OUTPUT=false, asks for the JSON in the prompt, reads it leniently and re-asks once when it does not fit', async () => {
    const { client, llm } = await start({ LLM_STRUCTURED_OUTPUT: 'false' }, true);
    llm.enqueue({ text: 'Here you go: {"points": "not a list"}' }, { text: 'Sorry!\n```json\n{"points": ["cost",]}\n```' });
    llm.respond(() => ({ text: 'Fine.' }));
    client.chat('Should we move?', { agent_mode: true, strategy: 'example' });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')).toMatchObject({ content: '1. Fine.' });
    const [first, second] = llm.requests;
    expect(first!.body).not.toHaveProperty('response_format');
    expect(first!.body.messages[0]!.content).toContain('JSON Schema');
    expect(second!.purpose).toBe('example.points');
    expect(second!.body.messages.at(-1)!.content).toMatch(/not a valid "points" object \(points: /);
  });

  it('ends the run with agent_error when the data still does not fit after the re-ask', async () => {
    const { client, llm } = await start({}, true);
    llm.respond(() => ({ text: 'no data here' }));
    client.chat('Should we move?', { agent_mode: true, strategy: 'example' });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_error:0', 'response_complete']);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/did not fit the "points" schema, twice/);
    expect(llm.requests).toHaveLength(2);
  });
});
