import { describe, expect, it } from 'vitest';
import { type Action, pendingQuestion, reduce } from '../../frontend/src/state/reducer.ts';
import { isStepFolded, phaseText, stepSummary } from '../../frontend/src/state/step-summary.ts';
import { initialViewState, type ViewState } from '../../frontend/src/state/view-state.ts';
import { CALCULATOR, sessionMessage } from '../helpers/web-session.ts';

const run = 'run-1';
let seq = 0;
const ts = '2026-01-01T00:00:00.000Z';
const logged = (event: Record<string, unknown>) => ({ ...event, seq: ++seq, ts, run_id: run });
const update = (updateType: string, fields: Record<string, unknown> = {}) => logged({ type: 'agent_update', update_type: updateType, ...fields });
const event = (value: Record<string, unknown>): Action => ({ kind: 'server_event', event: value as never });
const apply = (state: ViewState, ...values: Record<string, unknown>[]) => values.reduce((next, value) => reduce(next, event(value)), state);

const session = sessionMessage({ model: 'Demo model', demo: true, tools: [CALCULATOR] });

function started(): ViewState {
  seq = 0;
  let state = reduce(initialViewState, { kind: 'connection', state: 'live' });
  state = apply(state, session);
  state = reduce(state, { kind: 'user_message', id: 'u1', content: 'What is 6*7?' });
  return apply(state, update('agent_start', { max_steps: 3 }), update('agent_turn_start', { step: 1 }));
}

describe('the web app reducer', () => {
  it('keeps the session and the connection state', () => {
    const state = started();
    expect(state.connection).toBe('live');
    expect(state.session?.model).toBe('Demo model');
    expect(state.busy).toBe(true);
    expect(state.items.map((item) => item.kind)).toEqual(['user', 'run']);
    expect(state.runs[run]).toMatchObject({ maxSteps: 3, complete: false });
  });

  it('streams reason text, then replaces it with the full event', () => {
    let state = started();
    state = apply(state, { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'I will ', step: 1, run_id: run });
    state = apply(state, { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'multiply', step: 1, run_id: run });
    expect(state.runs[run]!.steps[0]).toMatchObject({ reason: 'I will multiply', reasonDone: false });
    state = apply(state, update('agent_reason', { step: 1, content: 'I will multiply 6 by 7.' }));
    expect(state.runs[run]!.steps[0]).toMatchObject({ reason: 'I will multiply 6 by 7.', reasonDone: true });
    // A late delta must not spoil the full text.
    state = apply(state, { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'late', step: 1, run_id: run });
    expect(state.runs[run]!.steps[0]!.reason).toBe('I will multiply 6 by 7.');
  });

  it('tracks a tool call from start to result', () => {
    let state = apply(started(), logged({ type: 'tool_start', step: 1, tool_call_id: 'c1', tool_name: 'calculator', arguments: { expression: '6*7' } }));
    expect(state.runs[run]!.steps[0]!.tools).toEqual([{ id: 'c1', name: 'calculator', arguments: { expression: '6*7' }, status: 'running' }]);
    state = apply(state, logged({ type: 'tool_complete', step: 1, tool_call_id: 'c1', tool_name: 'calculator', result: 42, duration_ms: 3 }));
    expect(state.runs[run]!.steps[0]!.tools[0]).toMatchObject({ status: 'done', result: 42, durationMs: 3, arguments: { expression: '6*7' } });
  });

  it('shows a tool error', () => {
    const state = apply(started(), logged({ type: 'tool_error', step: 1, tool_call_id: 'c1', tool_name: 'calculator', error: 'Division by zero' }));
    expect(state.runs[run]!.steps[0]!.tools[0]).toMatchObject({ status: 'error', error: 'Division by zero' });
  });

  it('copes with a tool result that arrives before its start', () => {
    let state = apply(started(), logged({ type: 'tool_complete', step: 1, tool_call_id: 'c1', tool_name: 'calculator', result: 1 }));
    state = apply(state, logged({ type: 'tool_start', step: 1, tool_call_id: 'c1', tool_name: 'calculator', arguments: { expression: '1' } }));
    expect(state.runs[run]!.steps[0]!.tools[0]).toMatchObject({ status: 'done', result: 1, arguments: { expression: '1' } });
  });

  it('creates the run and step when events arrive for one it has not seen', () => {
    seq = 100;
    const state = apply(initialViewState, update('agent_observe', { step: 2, content: 'Seen late.' }));
    expect(state.runs[run]!.steps).toMatchObject([{ step: 2, observe: 'Seen late.', observeDone: true }]);
    expect(state.items).toEqual([{ kind: 'run', id: `r${run}`, runId: run, order: 101 }]);
  });

  it('keeps steps in order when they arrive out of order', () => {
    let state = started();
    state = apply(state, update('agent_reason', { step: 3, content: 'three' }), update('agent_reason', { step: 2, content: 'two' }));
    expect(state.runs[run]!.steps.map((step) => step.step)).toEqual([1, 2, 3]);
  });

  it('ignores replayed events it has already applied', () => {
    const state = started();
    const replayed = apply(state, { type: 'agent_update', update_type: 'agent_turn_start', step: 9, seq: 1, ts, run_id: run });
    expect(replayed).toBe(state);
  });

  it('ignores unknown events and malformed ones', () => {
    const state = started();
    // Its seq still counts, so a reconnect does not ask for it again.
    expect(apply(state, { type: 'from_the_future', seq: 99 })).toEqual({ ...state, lastSeq: 99 });
    expect(reduce(state, { kind: 'server_event', event: null as never })).toBe(state);
    expect(apply(state, { type: 'agent_update', update_type: 'agent_reason_delta', delta: 'x', step: 1 })).toBe(state);
  });

  it('shows a pending question until it is answered', () => {
    let state = apply(started(), update('agent_request_input', { step: 1, question: 'Which unit?', tool_call_id: 'q1' }));
    expect(pendingQuestion(state)).toEqual({ runId: run, step: 1, text: 'Which unit?' });
    state = reduce(state, { kind: 'answer_sent', runId: run, answer: 'metres' });
    expect(pendingQuestion(state)).toBeUndefined();
    expect(state.runs[run]!.steps[0]!.question).toMatchObject({ status: 'answered', answer: 'metres' });
  });

  it('marks a question that timed out, and the run as ended by the timeout', () => {
    let state = apply(started(), update('agent_request_input', { step: 1, question: 'Which unit?' }));
    state = apply(state, update('agent_request_input_timeout', { step: 1 }), update('agent_stopped', { reason: 'input_timeout', step: 1 }));
    expect(state.runs[run]!.steps[0]!.question!.status).toBe('timed_out');
    expect(state.runs[run]!.end).toEqual({ kind: 'input_timeout' });
    expect(pendingQuestion(state)).toBeUndefined();
  });

  it('shows a parked run waiting for you, its question still open, until its next event', () => {
    let state = apply(started(), update('agent_request_input', { step: 1, question: 'Which unit?', question_id: 'q_1' }));
    state = apply(state, update('agent_parked', { step: 1, question_id: 'q_1' }));
    expect(state.runs[run]!.parked).toEqual({ questionId: 'q_1', since: ts });
    expect(state.runs[run]!.end).toBeUndefined();
    expect(pendingQuestion(state)).toMatchObject({ questionId: 'q_1', text: 'Which unit?' });
    state = apply(state, logged({ type: 'tool_complete', step: 1, tool_call_id: 'ask', tool_name: 'request_input', result: 'metres', duration_ms: 5 }));
    expect(state.runs[run]!.parked).toBeUndefined();
  });

  it('ends a completed run with the answer as the assistant turn', () => {
    let state = apply(started(), logged({ type: 'assistant_message', content: '**42**' }), update('agent_completion', { steps: 1, reason: 'answered' }));
    expect(state.busy).toBe(true);
    state = apply(state, logged({ type: 'response_complete' }));
    expect(state.busy).toBe(false);
    expect(state.activeRunId).toBeUndefined();
    expect(state.runs[run]).toMatchObject({ end: { kind: 'answered', steps: 1 }, complete: true });
    expect(state.items.at(-1)).toMatchObject({ kind: 'assistant', content: '**42**', runId: run });
  });

  it('says when max steps was reached', () => {
    const state = apply(started(), update('agent_completion', { steps: 3, reason: 'max_steps' }));
    expect(state.runs[run]!.end).toEqual({ kind: 'max_steps', steps: 3 });
  });

  it('marks running tools as stopped when the run is stopped', () => {
    let state = apply(started(), logged({ type: 'tool_start', step: 1, tool_call_id: 'c1', tool_name: 'slow', arguments: {} }));
    state = reduce(state, { kind: 'stop_requested' });
    expect(state.stopping).toBe(true);
    state = apply(state, update('agent_stopped', { reason: 'user', step: 1 }), logged({ type: 'response_complete' }));
    expect(state.runs[run]!.steps[0]!.tools[0]!.status).toBe('stopped');
    expect(state.runs[run]!.end).toEqual({ kind: 'stopped', reason: 'user' });
    expect(state).toMatchObject({ busy: false, stopping: false });
  });

  it('shows why a run failed', () => {
    const state = apply(started(), update('agent_error', { step: 1, message: 'The model endpoint answered 503' }));
    expect(state.runs[run]!.end).toEqual({ kind: 'failed', message: 'The model endpoint answered 503' });
  });

  it('streams a plain chat answer', () => {
    seq = 0;
    let state = reduce(apply(initialViewState, session), { kind: 'user_message', id: 'u1', content: 'Hi' });
    state = apply(state, { type: 'assistant_delta', delta: 'Hel' }, { type: 'assistant_delta', delta: 'lo' });
    expect(state.streamingAnswer).toBe('Hello');
    state = apply(state, { type: 'assistant_message', content: 'Hello!', seq: 1, ts }, { type: 'response_complete', seq: 2, ts });
    expect(state.streamingAnswer).toBeUndefined();
    expect(state.items.map((item) => item.kind)).toEqual(['user', 'assistant']);
    expect(state.busy).toBe(false);
  });

  it('shows a refused chat message as a notice and frees the composer', () => {
    seq = 0;
    let state = reduce(apply(initialViewState, session), { kind: 'user_message', id: 'u1', content: 'Hi' });
    state = apply(state, { type: 'error', code: 'unknown_tool', message: 'Unknown tool(s): nope' });
    expect(state.notice).toEqual({ code: 'unknown_tool', message: 'Unknown tool(s): nope' });
    expect(state.busy).toBe(false);
    expect(reduce(state, { kind: 'dismiss_notice' }).notice).toBeUndefined();
  });

  it('keeps a running run busy when a stray error arrives', () => {
    const state = apply(started(), { type: 'error', code: 'no_pending_input', message: 'not waiting' });
    expect(state.busy).toBe(true);
  });

  it('rebuilds a session from the history and the replayed log, in order, with finished runs marked', () => {
    seq = 0;
    let state = apply(initialViewState, { ...session, last_seq: 4, resumed: true });
    // The log replays first; the history API's messages arrive later and slot in between.
    state = apply(state, update('agent_start', { max_steps: 2 }), logged({ type: 'assistant_message', content: 'A1' }), logged({ type: 'response_complete' }));
    state = apply(state, { type: 'assistant_message', content: 'A2', seq: 4, ts });
    state = reduce(state, {
      kind: 'history_loaded',
      sessionId: 's-1',
      messages: [
        { role: 'user', content: 'Q1', after_seq: 0 },
        { role: 'assistant', content: 'A1', after_seq: 2 },
        { role: 'user', content: 'Q2', after_seq: 3 },
      ],
    });
    expect(
      state.items.map((item) => (item.kind === 'run' || item.kind === 'failure' || item.kind === 'rollback' ? item.kind : `${item.kind}:${item.content}`)),
    ).toEqual(['user:Q1', 'run', 'assistant:A1', 'user:Q2', 'assistant:A2']);
    expect(state.runs[run]).toMatchObject({ complete: true, replayed: true });
    // Loading the same history twice adds nothing.
    expect(reduce(state, { kind: 'history_loaded', sessionId: 's-1', messages: [{ role: 'user', content: 'Q1', after_seq: 0 }] }).items).toHaveLength(5);
  });

  it('ignores history of another session', () => {
    const state = started();
    expect(reduce(state, { kind: 'history_loaded', sessionId: 'other', messages: [{ role: 'user', content: 'x', after_seq: 0 }] })).toBe(state);
  });

  it('starts afresh when the server hands out a different session', () => {
    const state = apply(started(), { ...session, session_id: 's-2' });
    expect(state).toMatchObject({ lastSeq: 0, items: [], runs: {}, busy: false });
  });

  it('keeps the session files from file_saved and file_deleted, a newer save replacing an older one', () => {
    let state = started();
    const file = (name: string, size: number) => ({ name, size, modified: ts });
    state = apply(
      state,
      logged({ type: 'file_saved', file: file('notes.txt', 3), source: 'user' }),
      logged({ type: 'file_saved', file: file('out.md', 5), source: 'agent' }),
      logged({ type: 'file_saved', file: file('notes.txt', 9), source: 'user' }),
    );
    expect(state.files.map((entry) => [entry.name, entry.size, entry.source])).toEqual([
      ['out.md', 5, 'agent'],
      ['notes.txt', 9, 'user'],
    ]);
    state = apply(state, logged({ type: 'file_deleted', name: 'out.md' }));
    expect(state.files.map((entry) => entry.name)).toEqual(['notes.txt']);
  });

  it('updates the tool list and the MCP servers when tools_changed arrives', () => {
    const tools = [...session.tools, { name: 'everything__echo', description: 'echo', source: 'everything', available: false }];
    const servers = [{ name: 'everything', transport: 'stdio', status: 'unavailable', error: 'exited', tools: 1 }];
    const state = apply(started(), { type: 'tools_changed', tools, mcp_servers: servers });
    expect(state.session?.tools).toEqual(tools);
    expect(state.session?.mcp_servers).toEqual(servers);
  });

  it('tracks uploads in progress and shows why one failed', () => {
    let state = reduce(started(), { kind: 'upload_started', name: 'a.txt' });
    state = reduce(state, { kind: 'upload_started', name: 'b.txt' });
    expect(state.uploading).toEqual(['a.txt', 'b.txt']);
    state = reduce(state, { kind: 'upload_finished', name: 'a.txt' });
    state = reduce(state, { kind: 'upload_finished', name: 'b.txt', error: 'Could not attach b.txt: too large' });
    expect(state.uploading).toEqual([]);
    expect(state.notice).toEqual({ code: 'upload_failed', message: 'Could not attach b.txt: too large' });
  });

  it('says in its step that a fallback model answered a call, and why the first failed', () => {
    const state = apply(
      started(),
      update('agent_turn_start', { step: 1 }),
      update('agent_model_fallback', {
        purpose: 'roa.reason',
        model: 'llama3.1',
        from_model: 'gpt-4o-mini',
        failures: [{ model: 'gpt-4o-mini', reason: 'The model endpoint answered 500' }],
        step: 1,
      }),
    );
    expect(state.runs[run]?.steps[0]?.fallbacks).toEqual([
      { purpose: 'roa.reason', model: 'llama3.1', fromModel: 'gpt-4o-mini', reason: 'The model endpoint answered 500' },
    ]);
  });

  it('keeps what this tab attached for its next message, and sends it with that message only', () => {
    let state = reduce(started(), { kind: 'upload_started', name: 'photo.png' });
    state = reduce(state, { kind: 'upload_finished', name: 'photo.png' });
    state = reduce(state, { kind: 'upload_finished', name: 'report.pdf' });
    state = reduce(state, { kind: 'upload_finished', name: 'big.png', error: 'Could not attach big.png: too large' });
    expect(state.attached).toEqual(['photo.png', 'report.pdf']);
    state = reduce(state, { kind: 'detach', name: 'report.pdf' });
    state = apply(state, { type: 'file_deleted', name: 'gone.png', seq: ++seq, ts });
    expect(state.attached).toEqual(['photo.png']);
    state = reduce(state, { kind: 'user_message', id: 'u1', content: 'What is this?', attachments: ['photo.png'] });
    expect(state.attached).toEqual([]);
    expect(state.items.at(-1)).toMatchObject({ kind: 'user', content: 'What is this?', attachments: ['photo.png'] });
  });

  it("shows a running tool's progress and ignores reports that come after its result", () => {
    let state = apply(
      started(),
      update('agent_reason', { step: 1, content: 'Go.' }),
      logged({ type: 'tool_start', step: 1, tool_call_id: 't1', tool_name: 'slow', arguments: {} }),
    );
    state = apply(state, { type: 'tool_progress', run_id: run, step: 1, tool_call_id: 't1', tool_name: 'slow', progress: 2, total: 5, message: 'halfway' });
    expect(state.runs[run]!.steps[0]!.tools[0]).toMatchObject({ status: 'running', progress: { value: 2, total: 5, message: 'halfway' } });
    state = apply(state, logged({ type: 'tool_complete', step: 1, tool_call_id: 't1', tool_name: 'slow', result: 'ok' }));
    state = apply(state, { type: 'tool_progress', run_id: run, step: 1, tool_call_id: 't1', tool_name: 'slow', progress: 5, total: 5 });
    expect(state.runs[run]!.steps[0]!.tools[0]).toMatchObject({ status: 'done', progress: { value: 2 } });
  });
  it('never shows control-block JSON while reason streams or after stop', () => {
    let state = started();
    const raw = 'Evaluate 6*7*2 with the calculator.\n\n```json\n{"plan": "Evaluate 6*7*2", "tools_to_consider": ["calculator"], "fin';
    for (const delta of raw.match(/[\s\S]{1,7}/g)!) {
      state = apply(state, { type: 'agent_update', update_type: 'agent_reason_delta', delta, step: 1, run_id: run });
      expect(phaseText(state.runs[run]!.steps[0]!, 'reason')).not.toMatch(/[`{]|plan/);
    }
    state = reduce(state, { kind: 'stop_requested' });
    state = apply(state, update('agent_stopped', { reason: 'user' }), update('response_complete'));
    const step = state.runs[run]!.steps[0]!;
    expect(step.reasonDone).toBe(false);
    expect(phaseText(step, 'reason')).toBe('Evaluate 6*7*2 with the calculator.');
    expect(state.runs[run]!.end).toEqual({ kind: 'stopped', reason: 'user' });
  });

  it('shows the server’s finished reason text as it came, asterisks included', () => {
    const state = apply(started(), update('agent_reason', { step: 1, content: 'Evaluate 6*7*2 with the calculator.' }));
    expect(phaseText(state.runs[run]!.steps[0]!, 'reason')).toBe('Evaluate 6*7*2 with the calculator.');
  });

  it('folds a finished step as soon as the next one begins, with a one-line summary of its tool and result', () => {
    let state = apply(
      started(),
      update('agent_reason', { step: 1, content: 'Multiply first.' }),
      logged({ type: 'tool_start', step: 1, tool_call_id: 'c1', tool_name: 'calculator', arguments: { expression: '6*7' } }),
      logged({ type: 'tool_complete', step: 1, tool_call_id: 'c1', tool_name: 'calculator', result: '42' }),
      update('agent_observe', { step: 1, content: 'It is 42. Now double it.' }),
    );
    const first = () => state.runs[run]!.steps[0]!;
    expect(isStepFolded(state.runs[run]!, first())).toBe(false);
    state = apply(state, update('agent_turn_start', { step: 2 }));
    expect(isStepFolded(state.runs[run]!, first())).toBe(true);
    expect(isStepFolded(state.runs[run]!, state.runs[run]!.steps[1]!)).toBe(false);
    expect(stepSummary(first())).toBe('Calculator: 6*7 → 42');
    // The step the run ended in stays open next to the answer.
    state = apply(
      state,
      update('agent_observe', { step: 2, content: 'Done.' }),
      update('agent_completion', { steps: 2, reason: 'answered' }),
      update('response_complete'),
    );
    expect(isStepFolded(state.runs[run]!, state.runs[run]!.steps[1]!)).toBe(false);
  });

  it('sums up a step without tools by its first sentence, and a question (with its id and deadline) with its answer', () => {
    let state = apply(
      started(),
      update('agent_reason', { step: 1, content: 'Nothing to compute. I know this.' }),
      update('agent_observe', { step: 1, content: 'The answer is known. Finish.' }),
    );
    expect(stepSummary(state.runs[run]!.steps[0]!)).toBe('The answer is known.');
    state = apply(
      state,
      update('agent_turn_start', { step: 2 }),
      logged({ type: 'tool_start', step: 2, tool_call_id: 'q', tool_name: 'request_input', arguments: { question: 'Which city?' } }),
      update('agent_request_input', { step: 2, question: 'Which city?', tool_call_id: 'q', question_id: 'q-1', deadline: '2026-01-01T00:05:00.000Z' }),
    );
    expect(pendingQuestion(state)).toMatchObject({ text: 'Which city?', questionId: 'q-1', deadline: '2026-01-01T00:05:00.000Z' });
    expect(stepSummary(state.runs[run]!.steps[1]!)).toBe('asked “Which city?” (waiting)');
    state = reduce(state, { kind: 'answer_sent', runId: run, answer: 'Oslo' });
    expect(stepSummary(state.runs[run]!.steps[1]!)).toBe('asked “Which city?” → “Oslo”');
  });

  it('keeps when a run started and ended, for human times and its duration', () => {
    let state = started();
    expect(state.runs[run]!.startedAt).toBe(ts);
    state = apply(state, { ...update('agent_completion', { steps: 1, reason: 'answered' }), ts: '2026-01-01T00:00:04.200Z' });
    expect(state.runs[run]).toMatchObject({ startedAt: ts, endedAt: '2026-01-01T00:00:04.200Z', maxSteps: 3 });
  });
});
