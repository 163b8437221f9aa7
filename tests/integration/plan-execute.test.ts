import { describe, expect, it } from 'vitest';
import { observeStep as observe, planOf, replanningModel } from '../fixtures/plan-execute-model.ts';
import { type RecordedRequest, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { stepOf, summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();
const open = stepwise.open;

const schemaName = (request: RecordedRequest) => (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format?.json_schema?.name;

describe('plan_execute on the wire', () => {
  it('streams the plan, each step under its node id, a re-plan after a failed step, the metadata, then the answer', async () => {
    llm = open(await ScriptedLlmServer.start());
    llm.respond(replanningModel());
    ({ server, client } = await stepwise.start({}, llm));
    const catalog = client.session.strategy_catalog as unknown as Array<{
      name: string;
      label: string;
      options_schema: { properties: Record<string, { default: unknown }> };
    }>;
    const entry = catalog.find((strategy) => strategy.name === 'plan_execute')!;
    expect(entry).toMatchObject({ label: 'Plan and execute' });
    expect(entry.options_schema.properties).toMatchObject({ max_step_attempts: { default: 3 }, replan: { default: true } });

    client.chat('What is 6*7?', { agent_mode: true, strategy: 'plan_execute', strategy_options: { max_step_attempts: 2 } });
    const events = await client.untilComplete();
    const run = events.slice(events.findIndex((event) => event.update_type === 'agent_start'));
    expect(summarize(run)).toEqual([
      'agent_start',
      'agent_plan',
      'agent_plan_step',
      ...stepOf(1, 'calculator'),
      ...stepOf(2, 'calculator'),
      'agent_plan_step',
      'agent_plan',
      'agent_plan_step',
      ...stepOf(3, 'calculator'),
      'agent_plan_step',
      'agent_run_metadata',
      'assistant_message',
      'agent_completion:answered',
      'response_complete',
    ]);
    expect(run[0]).toMatchObject({ strategy: 'plan_execute', options: { max_step_attempts: 2, replan: true } });
    const plans = run.filter((event) => event.update_type === 'agent_plan');
    expect(plans[0]).toMatchObject({
      revision: 1,
      steps: [
        { index: 1, status: 'pending' },
        { index: 2, status: 'pending' },
      ],
    });
    expect(plans[0]).not.toHaveProperty('trigger');
    expect(plans[1]).toMatchObject({
      revision: 2,
      trigger: 'failed_attempts',
      steps: [
        { index: 1, goal: 'Compute 6*7 the hard way', status: 'failed' },
        { index: 2, goal: 'Compute 6*7 plainly', status: 'pending' },
      ],
    });
    expect(run.filter((event) => event.update_type === 'agent_plan_step')).toEqual([
      expect.objectContaining({ index: 1, status: 'running', node_id: '1' }),
      expect.objectContaining({ index: 1, status: 'failed', attempts: 2, observation: 'That did not settle it.' }),
      expect.objectContaining({ index: 2, status: 'running', node_id: '2' }),
      expect.objectContaining({ index: 2, status: 'done', attempts: 1, observation: '6*7 = 42.' }),
    ]);
    // Every event of a step carries its index as node_id.
    const logged = run.filter((event) => !String(event.update_type ?? event.type).endsWith('delta') && event.update_type !== 'agent_usage');
    const nodesOf = (from: number, to: number) => logged.slice(from, to).map((event) => event.node_id);
    expect(new Set(nodesOf(2, 14))).toEqual(new Set(['1']));
    expect(new Set(nodesOf(15, 22))).toEqual(new Set(['2']));
    expect(run.find((event) => event.update_type === 'agent_run_metadata')).toMatchObject({
      planning: { revisions: 2, steps: 2 },
      summary: { steps_total: 2, succeeded: 1, failed: 1, success_rate: 0.5, tool_attempts: 3 },
    });
    expect(run.find((event) => event.type === 'assistant_message')).toMatchObject({ content: '6*7 is **42**.' });

    // The model server saw the purposes, the nodes and the schema names of PROTOCOL.md.
    expect(llm.requests.map((request) => [request.purpose, request.node ?? null, schemaName(request) ?? null])).toEqual([
      ['plan_execute.plan', null, 'plan'],
      ['plan_execute.reason', '1', null],
      ['plan_execute.act', '1', null],
      ['plan_execute.observe', '1', null],
      ['plan_execute.reason', '1', null],
      ['plan_execute.act', '1', null],
      ['plan_execute.observe', '1', null],
      ['plan_execute.replan', null, 'plan'],
      ['plan_execute.reason', '2', null],
      ['plan_execute.act', '2', null],
      ['plan_execute.observe', '2', null],
      ['plan_execute.synthesis', null, null],
    ]);
    expect(new Set(llm.requests.map((request) => request.runId))).toEqual(new Set([run[0]!.run_id]));
  });

  it('asks the viability check (schema plan_viability) between steps that went well', async () => {
    llm = open(await ScriptedLlmServer.start());
    llm.respond((request) => {
      if (request.purpose === 'plan_execute.plan') return { text: planOf('One', 'Two') };
      if (request.purpose === 'plan_execute.viability') return { text: JSON.stringify({ viable: true, confidence: 0.95, reason: 'on track' }) };
      if (request.purpose === 'plan_execute.reason') return { text: reasonText('Nothing to call.', { finish: true }) };
      if (request.purpose === 'plan_execute.observe') return { text: observe('Done.', true) };
      return { text: 'All done.' };
    });
    ({ server, client } = await stepwise.start({}, llm));
    client.chat('Do two things', { agent_mode: true, strategy: 'plan_execute' });
    const events = await client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'answered' });
    const viability = llm.requests.find((request) => request.purpose === 'plan_execute.viability')!;
    expect(schemaName(viability)).toBe('plan_viability');
    expect(llm.requests.map((request) => request.purpose)).toEqual([
      'plan_execute.plan',
      'plan_execute.reason',
      'plan_execute.observe',
      'plan_execute.viability',
      'plan_execute.reason',
      'plan_execute.observe',
      'plan_execute.synthesis',
    ]);
  });

  it('ends with agent_error when the model gives no valid plan, asking once more first', async () => {
    llm = open(await ScriptedLlmServer.start());
    llm.respond(() => ({ text: 'I would rather not make a plan today.' }));
    ({ server, client } = await stepwise.start({}, llm));
    client.chat('Plan something', { agent_mode: true, strategy: 'plan_execute' });
    const events = await client.untilComplete();
    const run = events.slice(events.findIndex((event) => event.update_type === 'agent_start'));
    expect(summarize(run)).toEqual(['agent_start', 'agent_error:0', 'response_complete']);
    expect(String(run.find((event) => event.update_type === 'agent_error')!.message)).toContain('valid plan');
    expect(llm.requests.map((request) => request.purpose)).toEqual(['plan_execute.plan', 'plan_execute.plan']);
  });

  it('on the demo model, a plan run computes a chained calculation and answers it truly', async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo' }));
    client = open(await TestClient.connect(server.wsUrl));
    expect(client.session.strategies).toContain('plan_execute');
    client.chat('First compute 12*7, then add 15, then divide by 3', { agent_mode: true, strategy: 'plan_execute' });
    const events = await client.untilComplete();
    const kinds = summarize(events);
    expect(kinds).toContain('agent_plan');
    expect(kinds.filter((kind) => kind === 'tool_complete:calculator')).toHaveLength(3);
    expect(kinds.slice(-4)).toEqual(['agent_run_metadata', 'assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(String(events.find((event) => event.type === 'assistant_message')!.content)).toContain('= 33');
  });
  it('stopped mid-step, then resumed: the new run goes on in that step, the plan and finished calls not asked again', async () => {
    llm = open(await ScriptedLlmServer.start());
    let hold = true;
    llm.respond((request) => {
      switch (request.purpose) {
        case 'plan_execute.plan':
          return { text: planOf('Compute 6*7', 'Add 1') };
        case 'plan_execute.viability':
          return { text: JSON.stringify({ viable: true, confidence: 0.9, reason: 'fine' }) };
        case 'plan_execute.reason':
          return { text: reasonText('Use the calculator.') };
        case 'plan_execute.act':
          if (request.node === '2' && hold) return { hang: true };
          return { toolCalls: [{ name: 'calculator', arguments: { expression: request.node === '2' ? '42+1' : '6*7' } }] };
        case 'plan_execute.observe':
          return { text: observe(request.node === '2' ? '42+1 = 43.' : '6*7 = 42.', true) };
        default:
          return { text: 'It is **43**.' };
      }
    });
    ({ server, client } = await stepwise.start({}, llm));
    client.chat('What is 6*7 plus 1?', { agent_mode: true, strategy: 'plan_execute' });
    const held = await llm.waitFor((request) => request.purpose === 'plan_execute.act' && request.node === '2');
    hold = false;
    client.send({ type: 'agent_control', action: 'stop' });
    await llm.waitForAbort(held);
    const first = await client.untilComplete();
    expect(summarize(first).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    const firstRun = first.find((event) => event.update_type === 'agent_start')!.run_id;

    const before = llm.requests.length;
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    const second = await client.untilComplete({ from });
    expect(second[0]).toMatchObject({ update_type: 'agent_start', strategy: 'plan_execute', resumed_from: firstRun });
    expect(llm.requests.slice(before).map((request) => [request.purpose, request.node ?? null])).toEqual([
      ['plan_execute.act', '2'],
      ['plan_execute.observe', '2'],
      ['plan_execute.synthesis', null],
    ]);
    expect(second.filter((event) => event.update_type === 'agent_plan_step')).toEqual([expect.objectContaining({ index: 2, status: 'done', attempts: 1 })]);
    expect(second.find((event) => event.update_type === 'agent_run_metadata')).toMatchObject({ summary: { succeeded: 2, failed: 0 } });
    expect(second.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'It is **43**.' });
  });
});
