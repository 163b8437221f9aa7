import { describe, expect, it } from 'vitest';
import { parseServerEvent } from '../../frontend/src/lib/socket-client.ts';
import { type Action, pendingQuestion, reduce } from '../../frontend/src/state/reducer.ts';
import { branchName } from '../../frontend/src/state/branch-kind.ts';
import { compareNodeIds, emptyRun } from '../../frontend/src/state/run-tree.ts';
import { branchPlace } from '../../frontend/src/state/steering.ts';
import { isStepFolded } from '../../frontend/src/state/step-summary.ts';
import {
  branchEvents,
  branchStatus,
  branchTitle,
  describeEvent,
  describeUpdateType,
  eventsOf,
  fieldsOf,
  strategyEvent,
  summarizeFields,
} from '../../frontend/src/state/strategy-events.ts';
import { buildTimeline } from '../../frontend/src/state/timeline.ts';
import { initialViewState, type RunView, type ViewState } from '../../frontend/src/state/view-state.ts';
import { CALCULATOR, sessionMessage } from '../helpers/web-session.ts';

const run = 'run-1';
let seq = 0;
const ts = '2026-01-01T00:00:00.000Z';
const logged = (event: Record<string, unknown>) => ({ ...event, seq: ++seq, ts, run_id: run });
const update = (updateType: string, fields: Record<string, unknown> = {}) => logged({ type: 'agent_update', update_type: updateType, ...fields });
const apply = (state: ViewState, ...values: Record<string, unknown>[]) =>
  values.reduce((next, value) => reduce(next, { kind: 'server_event', event: value as never } satisfies Action), state);
/** What arrives from the socket: every frame goes through the client's parser, as in the app. */
const receive = (state: ViewState, ...values: Record<string, unknown>[]) =>
  values.reduce((next, value) => {
    const event = parseServerEvent(JSON.stringify(value));
    return event ? reduce(next, { kind: 'server_event', event }) : next;
  }, state);

const session = sessionMessage({ tools: [CALCULATOR] });

function started(strategy = 'plan_execute'): ViewState {
  seq = 0;
  const state = apply(initialViewState, session);
  return receive(
    reduce(state, { kind: 'user_message', id: 'u1', content: 'Plan a trip' }),
    update('agent_start', { max_steps: 6, strategy, options: { replan: true } }),
  );
}

const plan = () =>
  update('agent_plan', {
    revision: 1,
    steps: [
      { index: 1, goal: 'Find flights', tools: [], success_criteria: 'a flight', context: '', status: 'pending' },
      { index: 2, goal: 'Book a hotel', tools: [], success_criteria: 'a room', context: '', status: 'pending' },
    ],
  });

/** The run as a compact outline: branches with their steps' numbers, and the strategy events' types. */
function outline(view: RunView) {
  return {
    steps: view.steps.map((step) => step.step),
    branches: view.branches.map((branch) => `${branch.nodeId}:${branch.steps.map((step) => step.step).join(',')}`),
    events: view.strategyEvents.map((event) => (event.nodeId ? `${event.updateType}@${event.nodeId}` : event.updateType)),
  };
}

describe('the run tree in the web app reducer', () => {
  it('keeps a roa run (no node ids) as plain steps, with no branches or strategy events', () => {
    seq = 0;
    let state = receive(apply(initialViewState, session), update('agent_start', { max_steps: 3 }), update('agent_turn_start', { step: 1 }));
    state = receive(
      state,
      update('agent_reason', { step: 1, content: 'Compute.' }),
      logged({ type: 'tool_start', step: 1, tool_call_id: 'c1', tool_name: 'calculator', arguments: {} }),
    );
    expect(outline(state.runs[run]!)).toEqual({ steps: [1], branches: [], events: [] });
    expect(state.runs[run]!.strategy).toBeUndefined();
  });

  it('groups events by node id into branches, each with its own steps, phases and tool calls', () => {
    let state = receive(started(), plan(), update('agent_plan_step', { index: 1, status: 'running', attempts: 1 }));
    state = receive(
      state,
      update('agent_turn_start', { step: 1, node_id: '1' }),
      update('agent_reason', { step: 1, node_id: '1', content: 'Search flights.' }),
      logged({ type: 'tool_start', step: 1, node_id: '1', tool_call_id: 'c1', tool_name: 'calculator', arguments: { expression: '1+1' } }),
      logged({ type: 'tool_complete', step: 1, node_id: '1', tool_call_id: 'c1', tool_name: 'calculator', result: '2' }),
      update('agent_observe', { step: 1, node_id: '1', content: 'Found one.' }),
      update('agent_plan_step', { index: 1, status: 'done', attempts: 1, observation: 'Found one.' }),
      update('agent_turn_start', { step: 2, node_id: '2' }),
      update('agent_reason', { step: 2, node_id: '2', content: 'Book.' }),
    );
    const view = state.runs[run]!;
    expect(view).toMatchObject({ strategy: 'plan_execute', options: { replan: true }, maxSteps: 6 });
    expect(outline(view)).toEqual({ steps: [], branches: ['1:1', '2:2'], events: ['agent_plan', 'agent_plan_step', 'agent_plan_step'] });
    const first = view.branches[0]!.steps[0]!;
    expect(first).toMatchObject({ reason: 'Search flights.', reasonDone: true, observe: 'Found one.', observeDone: true });
    expect(first.tools).toEqual([{ id: 'c1', name: 'calculator', arguments: { expression: '1+1' }, status: 'done', result: '2' }]);
    expect(view.strategyEvents[0]).toMatchObject({ seq: 2, ts, updateType: 'agent_plan', event: { revision: 1, steps: expect.any(Array) } });
    expect(fieldsOf(view.strategyEvents[0]!)).toEqual({ revision: 1, steps: expect.any(Array) });
  });

  it('names branches after their plan step or task, with their latest status', () => {
    let state = receive(
      started(),
      plan(),
      update('agent_plan_step', { index: 1, status: 'running', attempts: 1 }),
      update('agent_turn_start', { step: 1, node_id: '1' }),
    );
    const view = () => state.runs[run]!;
    expect(branchTitle(view(), '1')).toBe('Step 1 · Find flights');
    expect(branchStatus(view(), '1')).toBe('running');
    expect(branchStatus(view(), '2')).toBe('pending');
    state = receive(state, update('agent_plan_step', { index: 1, status: 'failed', attempts: 3, observation: 'none left' }));
    expect(branchStatus(view(), '1')).toBe('failed');
    // A revised plan renames a step.
    state = receive(
      state,
      update('agent_plan', {
        revision: 2,
        trigger: 'not_viable',
        steps: [{ index: 1, goal: 'Take the train', tools: [], success_criteria: 'a seat', context: '', status: 'running' }],
      }),
    );
    expect(branchTitle(view(), '1')).toBe('Step 1 · Take the train');

    seq = 0;
    state = receive(
      started('research'),
      update('agent_task_graph', {
        doc: 'state.md',
        version: 1,
        stages: [
          { id: '1', name: 'Gather', status: 'running', tasks: [{ id: '1.2', title: 'Read the sources', agent: 'reader', status: 'running', depends_on: [] }] },
        ],
      }),
      update('agent_task_start', { task_id: '1.2', agent: 'reader', node_id: '1.2' }),
      update('agent_task_complete', { task_id: '1.2', status: 'done', summary: 'Read.', node_id: '1.2' }),
    );
    expect(branchTitle(view(), '1.2')).toBe('Task 1.2 · Read the sources');
    expect(branchTitle(view(), '3.1')).toBe('Task 3.1');
    expect(branchStatus(view(), '1.2')).toBe('done');
    expect(branchEvents(view(), '1.2').map((event) => event.updateType)).toEqual(['agent_task_start', 'agent_task_complete']);
    expect(branchEvents(view(), undefined).map((event) => event.updateType)).toEqual(['agent_task_graph']);
  });

  it('keeps update types it does not know as strategy events, through the socket client too', () => {
    const state = receive(
      started('solver'),
      update('agent_stage_start', { stage: 'approach_proposer', loop: 1 }),
      update('agent_from_the_future', { node_id: '4', detail: { deep: true } }),
    );
    expect(outline(state.runs[run]!)).toEqual({ steps: [], branches: ['4:'], events: ['agent_stage_start', 'agent_from_the_future@4'] });
    expect(state.runs[run]!.strategyEvents[1]!.fields).toEqual({ detail: { deep: true } });
    expect(state.lastSeq).toBe(seq);
  });

  it('passes unknown agent_update types from the socket with their fields, and drops malformed known events', () => {
    const plain = { type: 'agent_update', update_type: 'agent_hypothesis', seq: 7, ts, run_id: run, claim: 'x', confidence: 0.5 };
    expect(parseServerEvent(JSON.stringify(plain))).toEqual(plain);
    // A known type that fails validation is dropped: the reducer trusts the known types' fields.
    expect(parseServerEvent(JSON.stringify({ type: 'tool_start', seq: 8, run_id: run }))).toBeUndefined();
    expect(parseServerEvent(JSON.stringify({ type: 'agent_update', update_type: 'agent_reason', seq: 8, ts, run_id: run }))).toBeUndefined();
    expect(parseServerEvent(JSON.stringify({ type: 'tools_changed', tools: 'none' }))).toBeUndefined();
    // An unknown event type counts as seen.
    expect(parseServerEvent(JSON.stringify({ type: 'from_the_future', seq: 9, x: 1 }))).toEqual({ type: 'from_the_future', seq: 9 });
    // A strategy event without a run is of no use to the view.
    expect(parseServerEvent(JSON.stringify({ type: 'agent_update', update_type: 'agent_plan', seq: 10, ts }))).toBeUndefined();
  });

  it('streams deltas and progress into the branch they name', () => {
    let state = receive(started(), update('agent_turn_start', { step: 3, node_id: '2' }));
    state = receive(
      state,
      { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'Check ', step: 3, run_id: run, node_id: '2' },
      { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'the hotel.', step: 3, run_id: run, node_id: '2' },
      logged({ type: 'tool_start', step: 3, node_id: '2', tool_call_id: 't', tool_name: 'slow', arguments: {} }),
      { type: 'tool_progress', run_id: run, node_id: '2', step: 3, tool_call_id: 't', tool_name: 'slow', progress: 1, total: 2 },
    );
    const step = state.runs[run]!.branches[0]!.steps[0]!;
    expect(step).toMatchObject({ reason: 'Check the hotel.', reasonDone: false });
    expect(step.tools[0]).toMatchObject({ status: 'running', progress: { value: 1, total: 2 } });
    expect(state.runs[run]!.steps).toEqual([]);
  });

  it('orders branches the way people count, whatever order they start in', () => {
    const state = receive(started('research'), ...['2', '1.10', '1.2', '10'].map((nodeId) => update('agent_turn_start', { step: 1, node_id: nodeId })));
    expect(state.runs[run]!.branches.map((branch) => branch.nodeId)).toEqual(['1.2', '1.10', '2', '10']);
    expect(compareNodeIds('a', 'b')).toBeLessThan(0);
    expect(compareNodeIds('1', '1.1')).toBeLessThan(0);
  });

  it('finds a question a branch asks, answers only the one named, and stops the rest when the run ends', () => {
    let state = receive(
      started('research'),
      update('agent_request_input', { step: 1, node_id: '1.1', question: 'Which city?', question_id: 'q1' }),
      update('agent_request_input', { step: 1, node_id: '1.2', question: 'Which year?', question_id: 'q2' }),
    );
    expect(pendingQuestion(state)).toMatchObject({ text: 'Which city?', questionId: 'q1', nodeId: '1.1' });
    state = reduce(state, { kind: 'answer_sent', runId: run, answer: 'Oslo', questionId: 'q1' });
    expect(pendingQuestion(state)).toMatchObject({ text: 'Which year?', questionId: 'q2', nodeId: '1.2' });
    state = receive(
      state,
      logged({ type: 'tool_start', step: 1, node_id: '1.2', tool_call_id: 'c', tool_name: 'slow', arguments: {} }),
      update('agent_stopped', { reason: 'user' }),
    );
    const [first, second] = state.runs[run]!.branches;
    expect(first!.steps[0]!.question).toMatchObject({ status: 'answered', answer: 'Oslo' });
    expect(second!.steps[0]!.question!.status).toBe('stopped');
    expect(second!.steps[0]!.tools[0]!.status).toBe('stopped');
    expect(pendingQuestion(state)).toBeUndefined();
  });

  it('folds a branch’s step once a later step of the same branch begins, not when another branch moves on', () => {
    const state = receive(started(), update('agent_turn_start', { step: 1, node_id: '1' }), update('agent_turn_start', { step: 2, node_id: '2' }));
    const view = state.runs[run]!;
    const [first, second] = view.branches;
    expect(isStepFolded(view, first!.steps[0]!, first!.steps)).toBe(false);
    const later = receive(state, update('agent_turn_start', { step: 3, node_id: '1' })).runs[run]!;
    expect(isStepFolded(later, later.branches[0]!.steps[0]!, later.branches[0]!.steps)).toBe(true);
    expect(isStepFolded(later, second!.steps[0]!, later.branches[1]!.steps)).toBe(false);
  });

  it('keeps a strategy’s own ending reason', () => {
    const state = receive(started('autonomous'), update('agent_completion', { steps: 4, reason: 'workflow_complete' }));
    expect(state.runs[run]!.end).toEqual({ kind: 'answered', steps: 4, reason: 'workflow_complete' });
  });
});

describe('strategy events in words', () => {
  it('names update types in words, known ones and new ones', () => {
    expect(describeUpdateType('agent_plan')).toBe('Plan');
    expect(describeUpdateType('agent_todos')).toBe('To-dos');
    expect(describeUpdateType('agent_stage_start')).toBe('Stage started');
    expect(describeUpdateType('agent_task_graph')).toBe('Task graph');
    expect(describeUpdateType('agent_verdict')).toBe('Verdict');
    expect(describeUpdateType('agent_new_thing')).toBe('New thing');
  });

  it('sums up fields in one line: scalars by name, lists by length, objects left out', () => {
    expect(summarizeFields({ scope: 'task', target: '1.2', verdict: 'PASS', issues: [], follow_up_task_ids: ['1.3'], meta: { a: 1 } })).toBe(
      'scope: task · target: 1.2 · verdict: PASS · 0 issues · 1 follow up task ids',
    );
    expect(summarizeFields({ revision: 1, steps: [1, 2, 3] })).toBe('revision: 1 · 3 steps');
    expect(summarizeFields({ content: 'x'.repeat(200) }).length).toBeLessThanOrEqual(70);
  });

  it('puts known strategy events in words, not field names', () => {
    const described = (updateType: string, fields: Record<string, unknown>) => describeEvent(strategyEvent(update(updateType, fields)));
    expect(described('agent_plan_step', { index: 2, status: 'done', attempts: 1, observation: '84 + 15 = 99.' })).toBe('Step 2 done: 84 + 15 = 99.');
    expect(described('agent_plan_step', { index: 3, status: 'failed', attempts: 2 })).toBe('Step 3 failed (attempt 2)');
    expect(described('agent_plan_step', { index: 1, status: 'running', attempts: 1 })).toBe('Step 1 started');
    expect(described('agent_task_start', { task_id: '1.1', agent: 'literature_scout' })).toBe('Scout · task 1.1 started');
    expect(described('agent_task_complete', { task_id: '1.1', status: 'done', summary: 'Read **two** papers.' })).toBe('Task 1.1 · done: Read two papers.');
    expect(described('agent_stage_start', { stage: 'problem_solver', loop: 2 })).toBe('problem solver · loop 2');
    expect(described('agent_decision', { loop: 1, action: 'FINAL', rationale: 'Checked.', final_answer: '4', question_for_user: '', next_focus: '' })).toBe(
      'FINAL: Checked.',
    );
    expect(described('agent_verdict', { scope: 'final', target: 'final', verdict: 'PASS', issues: [], follow_up_task_ids: [] })).toBe('Final: PASS');
    expect(described('agent_verdict', { scope: 'task', target: '1.2', verdict: 'FAIL', issues: ['a gap'], follow_up_task_ids: ['1.3'] })).toBe(
      'task 1.2: FAIL · 1 issue',
    );
    expect(
      described('agent_todos', {
        todos: [
          { id: '1', title: 'Read', status: 'completed' },
          { id: '2', title: 'Write', status: 'pending' },
        ],
      }),
    ).toBe('2 to-dos, 1 done');
    expect(described('agent_guidance', { step: 1, variant: 'tools', level: 1, content: 'Go on.' })).toBe('A reminder for this iteration');
    // Known types without words of their own, and new ones, are summed up from their fields.
    expect(described('agent_message', { step: 1, content: 'Done.' })).toBe('step: 1 · content: Done.');
    expect(described('agent_new_thing', { count: 3 })).toBe('count: 3');
  });
});

describe('strategy events typed by update type', () => {
  it('a known strategy event is kept typed; an unknown update type is kept as fields', () => {
    const state = receive(started(), plan(), update('agent_hypothesis', { node_id: '2', claim: 'x', confidence: 0.5 }));
    const view = state.runs[run]!;
    const [known, unknown] = view.strategyEvents;
    expect(known!.event).toMatchObject({ type: 'agent_update', update_type: 'agent_plan', seq: 2, revision: 1 });
    expect(known!.fields).toBeUndefined();
    expect(unknown).toEqual({ seq: 3, ts, updateType: 'agent_hypothesis', nodeId: '2', fields: { claim: 'x', confidence: 0.5 } });
    // The typed accessor gives a type's events with their payload typed; an unknown one is only in the generic list.
    const plans = eventsOf(view, 'agent_plan');
    expect(plans.map((each) => each.event.steps.map((step) => step.goal))).toEqual([['Find flights', 'Book a hotel']]);
    expect(eventsOf(view, 'agent_verdict')).toEqual([]);
    expect(branchEvents(view, '2').map((each) => each.updateType)).toEqual(['agent_hypothesis']);
    // The generic list shows a known event's fields as they came, the envelope left out.
    expect(Object.keys(fieldsOf(known!))).toEqual(['revision', 'steps']);
    expect(fieldsOf(unknown!)).toEqual({ claim: 'x', confidence: 0.5 });
    expect(describeEvent(unknown!)).toBe('claim: x · confidence: 0.5');
  });

  it('keeps a known event that does not fit its schema as fields, out of the typed accessors, without failing', () => {
    // The socket drops such frames; an event that reaches the reducer another way must not break a panel.
    const state = apply(started(), update('agent_plan', { revision: 'one', steps: [{ index: 1, goal: 'Half a step' }] }), plan());
    const view = state.runs[run]!;
    expect(view.strategyEvents[0]).toEqual({ seq: 2, ts, updateType: 'agent_plan', fields: { revision: 'one', steps: [{ index: 1, goal: 'Half a step' }] } });
    expect(eventsOf(view, 'agent_plan').map((each) => each.seq)).toEqual([3]);
    expect(describeEvent(view.strategyEvents[0]!)).toBe('revision: one · 1 steps');
    // Branch names still come from the newest plan that names the step.
    expect(branchTitle(view, '1')).toBe('Step 1 · Find flights');
  });

  it('names a branch one way in its heading, its timeline row and where a message reached it: by its strategy, else by its id', () => {
    const cases: Array<[strategy: string | undefined, nodeId: string, name: string]> = [
      ['plan_execute', '2', 'Step 2'],
      ['research', '1', 'Task 1'],
      ['example', '1.2', 'Task 1.2'],
      [undefined, '3', 'Step 3'],
    ];
    for (const [strategy, nodeId, name] of cases) {
      const branchRun: RunView = {
        ...emptyRun('r'),
        ...(strategy ? { strategy } : {}),
        timeline: [
          { seq: 1, ts, kind: 'agent_turn_start', nodeId, step: 1 },
          { seq: 2, ts: '2026-01-01T00:00:01.000Z', kind: 'agent_usage', nodeId, purpose: 'act', promptTokens: 1, completionTokens: 1 },
        ],
      };
      expect(branchName(strategy, nodeId)).toBe(name);
      expect(branchTitle(branchRun, nodeId)).toBe(name);
      expect(buildTimeline(branchRun).rows.map((row) => row.label)).toEqual([name]);
      expect(branchPlace({ messageId: 'm1', seq: 3, step: 1, content: 'Look here', delivery: 'steer', nodeId }, strategy)).toBe(
        `reached ${name.toLowerCase()}`,
      );
    }
  });

  it('reads branch titles and statuses from an unknown update type’s steps and tasks too', () => {
    const state = receive(
      started('research'),
      update('agent_task_board', { stages: [{ id: 'A', tasks: [{ id: '9.1', title: 'Dig', status: 'blocked' }] }] }),
      update('agent_task_note', { task_id: '9.2', status: 'running' }),
    );
    const view = state.runs[run]!;
    expect(branchTitle(view, '9.1')).toBe('Task 9.1 · Dig');
    expect(branchStatus(view, '9.1')).toBe('blocked');
    expect(branchStatus(view, '9.2')).toBe('running');
  });
});
