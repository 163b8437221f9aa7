import { MISSING_PREREQUISITE_KEYWORDS, ModelError, planExecute } from '@stepwise/backend';
import type { CompletionRequest } from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import type { ArraySink } from '../helpers/array-sink.ts';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';
import { type ScriptedAnswer, ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';
import { stepOf } from '../helpers/ws-client.ts';

type PlanStepIn = { goal: string; primary_tools?: string[]; success_criteria?: string; context?: string };
const plan = (...steps: PlanStepIn[]) => ({
  steps: steps.map((step) => ({ primary_tools: [], success_criteria: 'done', context: '', ...step })),
});
const observe = (observation: string, complete: boolean) => `${observation}\n\n\`\`\`json\n${JSON.stringify({ observation, step_complete: complete })}\n\`\`\``;
const reason = (text: string) => `${text}\n\n\`\`\`json\n${JSON.stringify({ plan: text, tools_to_consider: [], finish: false })}\n\`\`\``;

interface Script {
  plan?: ScriptedAnswer;
  replans?: ScriptedAnswer[];
  viability?: { viable: boolean; confidence: number; reason: string };
  /** Whether the step (by its goal) completes on this attempt. */
  complete?: (goal: string, attempt: number) => boolean;
  observation?: (goal: string, attempt: number) => string;
  act?: (request: CompletionRequest) => ScriptedAnswer;
}

/** A model for plan_execute: a plan, steps that call the calculator and complete as the script says. */
function model(script: Script) {
  const replans = [...(script.replans ?? [])];
  return new ScriptedLlmClient((request) => {
    const goal = String(request.variables?.goal ?? '');
    const attempt = Number(request.variables?.attempt ?? 1);
    switch (request.purpose) {
      case 'plan_execute.plan':
        return script.plan ?? { parsed: plan({ goal: 'Compute 6*7', primary_tools: ['calculator'] }, { goal: 'Add 1' }) };
      case 'plan_execute.replan':
        return replans.shift() ?? { parsed: plan({ goal: 'Try another way' }) };
      case 'plan_execute.viability':
        return { parsed: script.viability ?? { viable: true, confidence: 0.9, reason: 'fine' } };
      case 'plan_execute.reason':
        return { text: reason(`Work on: ${goal}`) };
      case 'plan_execute.act':
        return script.act?.(request) ?? { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
      case 'plan_execute.observe':
        return { text: observe(script.observation?.(goal, attempt) ?? `${goal}: 42`, script.complete?.(goal, attempt) ?? true) };
      case 'plan_execute.synthesis':
        return { text: 'The answer is **43**.' };
      default:
        return undefined;
    }
  });
}

const start = (llm: ScriptedLlmClient, options: { maxSteps?: number; strategyOptions?: Record<string, unknown> } = {}) =>
  inProcessKernel(llm, [planExecute]).start('What is 6*7 plus 1?', { strategy: 'plan_execute', ...options });

const updates = (events: LoggedEventBody[], type: string) =>
  events.filter((event) => event.type === 'agent_update' && event.update_type === type) as Array<Record<string, unknown>>;

describe('the plan_execute strategy', () => {
  it('plans, runs each step as reason → act → observe under its node id, checks viability between steps, synthesizes, and sends the metadata before the answer', async () => {
    const llm = model({});
    const { sink, outcome } = start(llm);
    expect(await outcome).toMatchObject({ status: 'completed', answer: 'The answer is **43**.', steps: 2 });
    expect(llm.purposes()).toEqual([
      'plan_execute.plan',
      'plan_execute.reason',
      'plan_execute.act',
      'plan_execute.observe',
      'plan_execute.viability',
      'plan_execute.reason',
      'plan_execute.act',
      'plan_execute.observe',
      'plan_execute.synthesis',
    ]);
    expect(llm.requests[0]!.schema?.name).toBe('plan');
    expect(llm.requests[4]!.schema?.name).toBe('plan_viability');
    expect(sink.summary()).toEqual([
      'agent_start',
      'agent_plan',
      'agent_plan_step',
      ...stepOf(1, 'calculator'),
      'agent_plan_step',
      'agent_plan_step',
      ...stepOf(2, 'calculator'),
      'agent_plan_step',
      'agent_run_metadata',
      'assistant_message',
      'agent_completion:answered',
      'response_complete',
    ]);
    expect(sink.events[0]).toMatchObject({ strategy: 'plan_execute', options: { max_step_attempts: 3, replan: true } });
    expect(updates(sink.events, 'agent_plan')[0]).toMatchObject({
      revision: 1,
      steps: [
        { index: 1, goal: 'Compute 6*7', tools: ['calculator'], status: 'pending' },
        { index: 2, goal: 'Add 1', tools: [], status: 'pending' },
      ],
    });
    expect(updates(sink.events, 'agent_plan')[0]).not.toHaveProperty('trigger');
    // Every event of a step, and its model calls, carry the step's index.
    const stepEvents = sink.events.slice(2, 9);
    expect(stepEvents.every((event) => event.node_id === '1')).toBe(true);
    expect(sink.events.slice(9, 16).every((event) => event.node_id === '2')).toBe(true);
    expect(llm.requests.slice(1, 4).map((request) => request.nodeId)).toEqual(['1', '1', '1']);
    expect(llm.requests[0]!.nodeId).toBeUndefined();
    expect(updates(sink.events, 'agent_plan_step')).toEqual([
      expect.objectContaining({ index: 1, status: 'running', attempts: 0 }),
      expect.objectContaining({ index: 1, status: 'done', attempts: 1, observation: 'Compute 6*7: 42' }),
      expect.objectContaining({ index: 2, status: 'running', attempts: 0 }),
      expect.objectContaining({ index: 2, status: 'done', attempts: 1, observation: 'Add 1: 42' }),
    ]);
    expect(updates(sink.events, 'agent_run_metadata')[0]).toMatchObject({
      planning: { revisions: 1, steps: 2 },
      execution: [
        { index: 1, goal: 'Compute 6*7', success: true, attempts: 1, tools_used: ['calculator'] },
        { index: 2, goal: 'Add 1', success: true, attempts: 1, tools_used: ['calculator'] },
      ],
      summary: { steps_total: 2, succeeded: 2, failed: 0, success_rate: 1, tool_attempts: 2 },
    });
  });

  it('tells each executor call the step goal, the plan with statuses, and offers the primary tools first', async () => {
    const llm = model({ plan: { parsed: plan({ goal: 'Tell the time', primary_tools: ['current_time'], success_criteria: 'a time' }) } });
    await start(llm).outcome;
    const reasonCall = llm.requests.find((request) => request.purpose === 'plan_execute.reason')!;
    expect(reasonCall.variables).toMatchObject({ goal: 'Tell the time', success_criteria: 'a time', plan_status: '1. [running] Tell the time' });
    expect(reasonCall.variables!.tool_names).toEqual(['current_time', 'calculator']);
    const act = llm.requests.find((request) => request.purpose === 'plan_execute.act')!;
    expect(act.tools!.map((tool) => tool.name)).toEqual(['current_time', 'calculator', 'request_input']);
  });

  it('drops tools the run does not have from a step, with a note in its context, instead of failing', async () => {
    const llm = model({ plan: { parsed: plan({ goal: 'Search', primary_tools: ['web_search', 'calculator'] }) } });
    const { sink, outcome } = start(llm);
    expect(await outcome).toMatchObject({ status: 'completed' });
    const [first] = updates(sink.events, 'agent_plan');
    expect(first).toMatchObject({ steps: [{ tools: ['calculator'] }] });
    expect(String((first!.steps as Array<{ context: string }>)[0]!.context)).toContain('web_search');
  });

  it('never answers an empty plan "in 0 steps": the run fails', async () => {
    const llm = model({ plan: { parsed: { steps: [] } } });
    const { sink, outcome } = start(llm);
    expect(await outcome).toMatchObject({ status: 'failed' });
    expect(llm.purposes()).toEqual(['plan_execute.plan']);
    expect(sink.summary()).not.toContain('agent_completion:answered');
  });

  it('fails the run with agent_error quoting the start of a plan whose step has no goal', async () => {
    const llm = model({ plan: { parsed: plan({ goal: '  ' }) } });
    const { sink, outcome } = start(llm);
    expect(await outcome).toMatchObject({ status: 'failed' });
    const [error] = updates(sink.events, 'agent_error');
    expect(String(error!.message)).toContain('not valid');
    expect(String(error!.message)).toContain('{"steps":[{"goal":"  "');
    expect(llm.purposes()).toEqual(['plan_execute.plan']);
  });

  it('fails the run quoting what the model said when its reply was no plan at all', async () => {
    const said = 'Sure! Here is my plan: first I will think really hard.';
    const llm = model({ plan: { error: new ModelError('The model\'s answer did not fit the "plan" schema, twice: no JSON', { detail: said }) } });
    const { sink, outcome } = start(llm);
    expect(await outcome).toMatchObject({ status: 'failed' });
    expect(String(updates(sink.events, 'agent_error')[0]!.message)).toContain(said);
  });

  it('fails a step after max_step_attempts, then re-plans (failed_attempts), keeping the failed step and renumbering the new ones after it', async () => {
    const llm = model({
      plan: { parsed: plan({ goal: 'Compute 6*7' }, { goal: 'Old second' }, { goal: 'Old third' }) },
      complete: (goal) => goal !== 'Compute 6*7',
      replans: [{ parsed: plan({ goal: 'New second' }, { goal: 'New third' }) }],
    });
    const { sink, outcome } = start(llm, { strategyOptions: { max_step_attempts: 2 } });
    expect(await outcome).toMatchObject({ status: 'completed', steps: 4 });
    expect(updates(sink.events, 'agent_plan_step')[1]).toMatchObject({ index: 1, status: 'failed', attempts: 2 });
    const [, revised, ...later] = updates(sink.events, 'agent_plan');
    expect(later).toEqual([]);
    expect(revised).toMatchObject({
      revision: 2,
      trigger: 'failed_attempts',
      steps: [
        { index: 1, goal: 'Compute 6*7', status: 'failed' },
        { index: 2, goal: 'New second', status: 'pending' },
        { index: 3, goal: 'New third', status: 'pending' },
      ],
    });
    expect(llm.requests.find((request) => request.purpose === 'plan_execute.replan')!.schema?.name).toBe('plan');
    expect(llm.purposes().filter((purpose) => purpose === 'plan_execute.reason')).toHaveLength(4);
    expect(updates(sink.events, 'agent_run_metadata')[0]).toMatchObject({
      planning: { revisions: 2, steps: 3 },
      summary: { steps_total: 3, succeeded: 2, failed: 1 },
    });
    // The step that failed was not checked for viability: the failure was trigger enough.
    expect(llm.purposes().indexOf('plan_execute.replan')).toBeLessThan(llm.purposes().indexOf('plan_execute.viability'));
  });

  it.each(MISSING_PREREQUISITE_KEYWORDS.slice(0, 3))(
    're-plans (missing_prerequisite) when an observation says "%s", without a viability call',
    async (keyword) => {
      const llm = model({ observation: (goal) => (goal === 'Compute 6*7' ? `The input file is ${keyword} here.` : 'ok') });
      const { sink, outcome } = start(llm);
      expect(await outcome).toMatchObject({ status: 'completed' });
      expect(updates(sink.events, 'agent_plan')[1]).toMatchObject({ revision: 2, trigger: 'missing_prerequisite' });
      expect(llm.purposes()).not.toContain('plan_execute.viability');
    },
  );

  it('re-plans (not_viable) when the viability check is sure enough, and not when it is unsure', async () => {
    const sure = model({ viability: { viable: false, confidence: 0.7, reason: 'the numbers changed' } });
    const run = start(sure);
    await run.outcome;
    expect(updates(run.sink.events, 'agent_plan')[1]).toMatchObject({ revision: 2, trigger: 'not_viable' });
    expect(sure.requests.find((request) => request.purpose === 'plan_execute.replan')!.variables).toMatchObject({ reason: 'the numbers changed' });

    const unsure = model({ viability: { viable: false, confidence: 0.5, reason: 'maybe' } });
    const second = start(unsure);
    await second.outcome;
    expect(updates(second.sink.events, 'agent_plan')).toHaveLength(1);
    expect(unsure.purposes()).not.toContain('plan_execute.replan');
  });

  it('makes at most 3 re-plans a run, then goes on with the plan it has and says so to the synthesis', async () => {
    const failing = { parsed: plan({ goal: 'Fail again' }, { goal: 'Fail later' }) };
    const llm = model({
      plan: { parsed: plan({ goal: 'Fail' }, { goal: 'Fail too' }) },
      complete: () => false,
      replans: [failing, failing, failing, failing],
    });
    const { sink, outcome } = start(llm, { maxSteps: 20, strategyOptions: { max_step_attempts: 1 } });
    expect(await outcome).toMatchObject({ status: 'completed' });
    expect(llm.purposes().filter((purpose) => purpose === 'plan_execute.replan')).toHaveLength(3);
    expect(updates(sink.events, 'agent_plan').map((event) => event.revision)).toEqual([1, 2, 3, 4]);
    const synthesis = llm.requests.find((request) => request.purpose === 'plan_execute.synthesis')!;
    expect(String(synthesis.variables!.notes)).toContain('used its 3 re-plans');
  });

  it('with replan: false never checks viability or re-plans', async () => {
    const llm = model({ complete: () => false });
    const { sink, outcome } = start(llm, { strategyOptions: { replan: false, max_step_attempts: 1 } });
    expect(await outcome).toMatchObject({ status: 'completed' });
    expect(llm.purposes()).not.toContain('plan_execute.viability');
    expect(llm.purposes()).not.toContain('plan_execute.replan');
    expect(updates(sink.events, 'agent_plan_step').filter((event) => event.status === 'failed')).toHaveLength(2);
  });

  it('refuses unknown options', () => {
    expect(() => start(model({}), { strategyOptions: { max_attempts: 2 } })).toThrow(/max_attempts/);
  });

  it('counts executor iterations across the plan against agent_max_steps and ends at max_steps with a synthesis', async () => {
    const llm = model({ complete: (_goal, attempt) => attempt >= 2 });
    const { sink, outcome } = start(llm, { maxSteps: 3 });
    expect(await outcome).toMatchObject({ status: 'completed', steps: 3 });
    expect(sink.summary().at(-2)).toBe('agent_completion:max_steps');
    expect(llm.purposes().filter((purpose) => purpose === 'plan_execute.reason')).toHaveLength(3);
    expect(llm.purposes().at(-1)).toBe('plan_execute.synthesis');
    expect(updates(sink.events, 'agent_turn_start').map((event) => [event.step, event.node_id])).toEqual([
      [1, '1'],
      [2, '1'],
      [3, '2'],
    ]);
  });

  it('stops mid-step: the call in flight is aborted, the run ends with agent_stopped and no synthesis', async () => {
    const llm = model({ act: () => ({ hang: true }) });
    const { sink, control, outcome } = start(llm);
    await llm.untilCalls(3);
    control.stop('user');
    expect(await outcome).toMatchObject({ status: 'stopped', reason: 'user', steps: 1 });
    expect(sink.summary().slice(-2)).toEqual(['agent_stopped:1', 'response_complete']);
    expect(llm.purposes()).toEqual(['plan_execute.plan', 'plan_execute.reason', 'plan_execute.act']);
  });
  it('after a restart mid-plan goes on from its journal: the plan and finished calls are not made again, nothing is logged twice', async () => {
    const kernelEvents = new Set(['agent_start', 'agent_completion', 'agent_stopped', 'agent_error', 'assistant_message', 'response_complete']);
    const logged = (sink: ArraySink) => sink.events.filter((event) => !kernelEvents.has(event.type === 'agent_update' ? event.update_type : event.type));
    let acts = 0;
    const first = model({
      act: () => (++acts === 2 ? { hang: true } : { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' }, id: `c${acts}` }] }),
    });
    const kernel = inProcessKernel(first, [planExecute]);
    const crashed = kernel.start('What is 6*7 plus 1?', { strategy: 'plan_execute', runId: 'run-p' });
    await first.untilCalls(7);
    const events = logged(crashed.sink);
    const entries = (await kernel.journal.read('run-p')).filter((entry) => entry.kind !== 'input');
    crashed.control.stop('shutdown');
    await crashed.outcome;

    const second = model({});
    const restarted = inProcessKernel(second, [planExecute]);
    restarted.journal.runs.set('run-p', structuredClone(kernel.journal.runs.get('run-p')!));
    const resumed = restarted.start('What is 6*7 plus 1?', {
      strategy: 'plan_execute',
      runId: 'run-p',
      past: { runId: 'run-p', entries, events, storedMessages: 0 },
    });
    expect(await resumed.outcome).toMatchObject({ status: 'completed', steps: 2 });
    expect(second.purposes()).toEqual(['plan_execute.act', 'plan_execute.observe', 'plan_execute.synthesis']);
    const all = [...events, ...resumed.sink.events].map((event) => JSON.stringify(event));
    expect(all.filter((line, at) => all.indexOf(line) !== at)).toEqual([]);
    expect(updates(resumed.sink.events, 'agent_plan_step')).toEqual([expect.objectContaining({ index: 2, status: 'done' })]);
  });
});
