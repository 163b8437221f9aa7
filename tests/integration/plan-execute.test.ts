import { describe, expect, it } from 'vitest';
import { observeStep as observe, planExecuteModel, replanningModel, VIABLE } from '../fixtures/plan-execute-model.ts';
import { type RecordedRequest, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { gate, userTurns } from '../helpers/steer.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise();

const schemaName = (request: RecordedRequest) => (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format?.json_schema?.name;

describe('plan_execute on the wire', () => {
  it('streams the plan, each step under its node id, a re-plan after a failed step, the metadata, then the answer', async () => {
    const { llm, client } = await stepwise.start();
    llm.respond(replanningModel());
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
      'agent_turn_start:1',
      'agent_reason:1',
      'tool_start:calculator',
      'tool_complete:calculator',
      'agent_observe:1',
      'agent_turn_start:2',
      'agent_reason:2',
      'tool_start:calculator',
      'tool_complete:calculator',
      'agent_observe:2',
      'agent_plan_step',
      'agent_plan',
      'agent_plan_step',
      'agent_turn_start:3',
      'agent_reason:3',
      'tool_start:calculator',
      'tool_complete:calculator',
      'agent_observe:3',
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
    const stepOf = (from: number, to: number) => logged.slice(from, to).map((event) => event.node_id);
    expect(new Set(stepOf(2, 14))).toEqual(new Set(['1']));
    expect(new Set(stepOf(15, 22))).toEqual(new Set(['2']));
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
    const { llm, client } = await stepwise.start();
    llm.respond(
      planExecuteModel({
        plan: ['One', 'Two'],
        viability: () => ({ text: JSON.stringify({ viable: true, confidence: 0.95, reason: 'on track' }) }),
        reason: () => ({ text: reasonText('Nothing to call.', { finish: true }) }),
        observe: () => ({ text: observe('Done.', true) }),
        answer: 'All done.',
      }),
    );
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

  it('a message for the run is read by the viability check, which re-plans for it (the revision names it); one for a step reaches that step', async () => {
    const { llm, client } = await stepwise.start();
    const held = gate();
    const forRun = 'Use 5+5 instead of 3+3.';
    const forStep = 'Say the sum in words.';
    llm.respond(
      planExecuteModel({
        plan: ['Compute 2+2', 'Compute 3+3'],
        replan: ['Compute 5+5'],
        viability: (request) =>
          userTurns(request, forRun) ? { text: JSON.stringify({ viable: false, confidence: 0.9, reason: 'The person wants 5+5.' }) } : { text: VIABLE },
        // Step 1's first call waits until both messages are acknowledged.
        reason: (request) => ({ text: reasonText('Nothing to call.', { finish: true }), ...(request.node === '1' ? { after: held.promise } : {}) }),
        observe: () => ({ text: observe('Done.', true) }),
        answer: 'Four, then ten.',
      }),
    );
    client.chat('Add some numbers', { agent_mode: true, strategy: 'plan_execute' });
    await llm.waitFor((request) => request.purpose === 'plan_execute.reason');
    client.chat(forRun);
    const runAck = await client.waitFor('message_queued');
    client.chat(forStep, { node_id: '1' });
    const stepAck = await client.next((event) => event.type === 'message_queued' && event.message_id !== runAck.message_id);
    held.open();
    const events = await client.untilComplete();

    // The step's message reached the step's next call; the run's, the viability check, and every later call once.
    expect(llm.requests.map((request) => [request.purpose, request.node ?? null, userTurns(request, forStep), userTurns(request, forRun)])).toEqual([
      ['plan_execute.plan', null, 0, 0],
      ['plan_execute.reason', '1', 0, 0],
      ['plan_execute.observe', '1', 1, 0],
      ['plan_execute.viability', null, 0, 1],
      ['plan_execute.replan', null, 0, 1],
      ['plan_execute.reason', '2', 0, 1],
      ['plan_execute.observe', '2', 0, 1],
      ['plan_execute.synthesis', null, 0, 1],
    ]);
    // The re-plan's instructions name the message it follows.
    const replan = llm.requests.find((request) => request.purpose === 'plan_execute.replan')!;
    expect(replan.body.messages[0]!.content).toContain(forRun);
    const steers = events.filter((event) => event.update_type === 'agent_steer');
    expect(steers).toEqual([
      expect.objectContaining({ message_id: stepAck.message_id, step: 1, node_id: '1' }),
      expect.objectContaining({ message_id: runAck.message_id, step: 1 }),
    ]);
    expect(steers[1]).not.toHaveProperty('node_id');
    expect(events.filter((event) => event.update_type === 'agent_plan')[1]).toMatchObject({
      revision: 2,
      trigger: 'message',
      message_ids: [runAck.message_id],
      steps: [
        { index: 1, goal: 'Compute 2+2', status: 'done' },
        { index: 2, goal: 'Compute 5+5', status: 'pending' },
      ],
    });
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });

  it('stop with a step’s node id cuts that step alone: it ends failed with its own receipt and the plan goes on', async () => {
    const { llm, client } = await stepwise.start();
    llm.respond(
      planExecuteModel({
        plan: ['Wait for something slow', 'Compute 3+3'],
        replan: ['Compute 3+3'],
        reason: (request) => (request.node === '1' ? { hang: true } : { text: reasonText('Nothing to call.', { finish: true }) }),
        observe: () => ({ text: observe('Six.', true) }),
        answer: 'Step 1 was stopped; 3+3 is 6.',
      }),
    );
    client.chat('Do two things', { agent_mode: true, strategy: 'plan_execute' });
    const hanging = await llm.waitFor((request) => request.purpose === 'plan_execute.reason' && request.node === '1');
    client.send({ type: 'agent_control', action: 'stop', node_id: '1' });
    await llm.waitForAbort(hanging);
    const events = await client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_node_stopped')).toMatchObject({ node_id: '1', calls: [] });
    expect(events.filter((event) => event.update_type === 'agent_plan_step' && event.index === 1).at(-1)).toMatchObject({ status: 'failed' });
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(llm.requests.filter((request) => request.aborted)).toEqual([hanging]);
    // A stop for a step that is not running is refused, and the run is not touched.
    client.send({ type: 'agent_control', action: 'stop', node_id: '9' });
    expect(await client.next((event) => event.type === 'error')).toMatchObject({ code: 'no_active_run' });
  });

  it('ends with agent_error when the model gives no valid plan, asking once more first', async () => {
    const { llm, client } = await stepwise.start();
    llm.respond(() => ({ text: 'I would rather not make a plan today.' }));
    client.chat('Plan something', { agent_mode: true, strategy: 'plan_execute' });
    const events = await client.untilComplete();
    const run = events.slice(events.findIndex((event) => event.update_type === 'agent_start'));
    expect(summarize(run)).toEqual(['agent_start', 'agent_error:0', 'response_complete']);
    expect(String(run.find((event) => event.update_type === 'agent_error')!.message)).toContain('valid plan');
    expect(llm.requests.map((request) => request.purpose)).toEqual(['plan_execute.plan', 'plan_execute.plan']);
  });

  it('on the demo model, a plan run computes a chained calculation and answers it truly', async () => {
    const { client } = await stepwise.demo();
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
    const { llm, client } = await stepwise.start();
    let hold = true;
    llm.respond(
      planExecuteModel({
        plan: ['Compute 6*7', 'Add 1'],
        reason: () => ({ text: reasonText('Use the calculator.') }),
        act: (request) => {
          if (request.node === '2' && hold) return { hang: true };
          return { toolCalls: [{ name: 'calculator', arguments: { expression: request.node === '2' ? '42+1' : '6*7' } }] };
        },
        observe: (request) => ({ text: observe(request.node === '2' ? '42+1 = 43.' : '6*7 = 42.', true) }),
        answer: 'It is **43**.',
      }),
    );
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
