import { describe, expect, it } from 'vitest';
import { type Action, reduce } from '../../frontend/src/state/reducer.ts';
import { messagesAfterRuns, steerPlace, waitingSteers } from '../../frontend/src/state/steering.ts';
import { initialViewState, type ViewState } from '../../frontend/src/state/view-state.ts';
import { receive, testSession } from '../helpers/web-view.ts';

const run = 'run-1';
let seq = 0;
const ts = '2026-01-01T00:00:00.000Z';
const logged = (event: Record<string, unknown>, runId = run) => ({ ...event, seq: ++seq, ts, run_id: runId });
const update = (updateType: string, fields: Record<string, unknown> = {}, runId = run) =>
  logged({ type: 'agent_update', update_type: updateType, ...fields }, runId);
const act = (state: ViewState, ...actions: Action[]) => actions.reduce(reduce, state);
const session = testSession;
const queued = (messageId: string, content: string, delivery: string, fields: Record<string, unknown> = {}) => ({
  type: 'message_queued',
  message_id: messageId,
  delivery,
  position: 1,
  content,
  ...fields,
});

/** A roa run at its second step. */
function running(): ViewState {
  seq = 0;
  let state = act(initialViewState, { kind: 'connection', state: 'live' });
  state = receive(state, session);
  state = act(state, { kind: 'user_message', id: 'u1', content: 'Count the primes below 50' });
  return receive(state, update('agent_start', { max_steps: 5 }), update('agent_turn_start', { step: 1 }), update('agent_turn_start', { step: 2 }));
}

describe('a message sent during a run', () => {
  it('shows as sent, then as waiting once stored, then where it landed, and the run goes on untouched', () => {
    let state = act(running(), { kind: 'message_sent', id: 'local-1', content: 'Only odd numbers', delivery: 'steer', runId: run });
    expect(state.pending).toEqual([{ id: 'local-1', status: 'sending', delivery: 'steer', content: 'Only odd numbers', runId: run }]);
    // Nothing of the conversation changes: no user turn, the run still the active one.
    expect(state.items.map((item) => item.kind)).toEqual(['user', 'run']);
    state = receive(state, queued('m-1', 'Only odd numbers', 'steer'));
    expect(state.pending).toEqual([{ id: 'm-1', status: 'waiting', delivery: 'steer', content: 'Only odd numbers', position: 1, runId: run }]);
    expect(waitingSteers(state.pending, run, state.activeRunId).map((message) => message.id)).toEqual(['m-1']);

    state = receive(state, update('agent_steer', { message_id: 'm-1', step: 3, content: 'Only odd numbers', delivery: 'steer' }));
    expect(state.pending).toEqual([]);
    const steers = state.runs[run]!.steers!;
    expect(steers).toMatchObject([{ messageId: 'm-1', step: 3, content: 'Only odd numbers', delivery: 'steer' }]);
    expect(steerPlace(steers[0]!)).toBe('applied at step 3');
    // Steering is not a strategy event: a roa run keeps showing its steps.
    expect(state.runs[run]!.strategyEvents).toEqual([]);
    expect(state.activeRunId).toBe(run);
    expect(state.busy).toBe(true);
  });

  it('says that an interrupt cut the model call, and keeps its partial words', () => {
    let state = act(running(), { kind: 'message_sent', id: 'local-1', content: 'Stop, use a sieve', delivery: 'interrupt', runId: run });
    state = receive(
      state,
      queued('m-2', 'Stop, use a sieve', 'interrupt'),
      update('agent_steer', {
        message_id: 'm-2',
        step: 2,
        content: 'Stop, use a sieve',
        delivery: 'interrupt',
        interrupted: true,
        partial: 'I will check 2, 3',
      }),
    );
    const steer = state.runs[run]!.steers![0]!;
    expect(steer).toMatchObject({ interrupted: true, partial: 'I will check 2, 3' });
    expect(steerPlace(steer)).toBe('interrupted step 2');
  });

  it('is withdrawn with cancel_message: cancelling, then gone once the server says so', () => {
    let state = receive(running(), queued('m-3', 'Never mind', 'steer', { run_id: run }));
    state = act(state, { kind: 'cancel_requested', messageId: 'm-3' });
    expect(state.pending[0]).toMatchObject({ id: 'm-3', status: 'cancelling' });
    state = receive(state, { type: 'message_cancelled', message_id: 'm-3' });
    expect(state.pending).toEqual([]);
  });

  it('waits again when the withdrawal came too late (unknown_message), saying so', () => {
    let state = receive(running(), queued('m-4', 'Too late', 'steer', { run_id: run }));
    state = act(state, { kind: 'cancel_requested', messageId: 'm-4' });
    state = receive(state, { type: 'error', code: 'unknown_message', message: 'No waiting message "m-4" in this chat' });
    expect(state.pending[0]).toMatchObject({ id: 'm-4', status: 'waiting' });
    expect(state.notice).toEqual({ code: 'unknown_message', message: 'No waiting message "m-4" in this chat' });
    expect(state.busy).toBe(true);
  });

  it.each(['queue_full', 'message_too_long'])('refused with %s, is taken back with the reason shown; the run view is untouched', (code) => {
    const before = act(running(), { kind: 'message_sent', id: 'local-1', content: 'x'.repeat(20), delivery: 'steer', runId: run });
    const state = receive(before, { type: 'error', code, message: 'Refused; the run goes on.' });
    expect(state.pending).toEqual([]);
    expect(state.notice).toEqual({ code, message: 'Refused; the run goes on.' });
    expect(state.runs).toBe(before.runs);
    expect(state.items).toBe(before.items);
    expect(state.busy).toBe(true);
    expect(state.activeRunId).toBe(run);
  });

  it('shows another tab’s message as waiting too', () => {
    const state = receive(running(), queued('m-5', 'From the other tab', 'steer'));
    expect(state.pending).toEqual([{ id: 'm-5', status: 'waiting', delivery: 'steer', content: 'From the other tab', position: 1, runId: run }]);
  });
});

describe('a message queued after the run', () => {
  it('waits after the run, then becomes the next run’s user turn when that run starts with it', () => {
    let state = act(running(), { kind: 'message_sent', id: 'local-1', content: 'Now below 100', delivery: 'queue' });
    state = receive(state, queued('m-6', 'Now below 100', 'queue', { position: 1 }));
    expect(messagesAfterRuns(state).map((message) => message.id)).toEqual(['m-6']);
    expect(waitingSteers(state.pending, run, state.activeRunId)).toEqual([]);
    state = receive(state, update('agent_completion', { steps: 2 }), logged({ type: 'response_complete' }));
    expect(state.pending).toHaveLength(1);
    state = receive(state, update('agent_start', { max_steps: 5, message_id: 'm-6', question: 'Now below 100' }, 'run-2'));
    expect(state.pending).toEqual([]);
    expect(state.items.map((item) => (item.kind === 'user' ? `user:${item.content}` : item.kind))).toEqual([
      'user:Count the primes below 50',
      'run',
      'user:Now below 100',
      'run',
    ]);
    expect(state.activeRunId).toBe('run-2');
    // The history API's copy of that message (a reload; kept after the log's last event before the run) is not shown twice.
    state = reduce(state, { kind: 'history_loaded', sessionId: 's-1', messages: [{ role: 'user', content: 'Now below 100', after_seq: seq - 1 }] });
    expect(state.items.filter((item) => item.kind === 'user' && item.content === 'Now below 100')).toHaveLength(1);
  });
});

describe('a message sent while a plain answer streams', () => {
  it('is queued, and becomes the user turn of the next plain answer when that one starts', () => {
    seq = 0;
    let state = act(receive(initialViewState, session), { kind: 'user_message', id: 'u1', content: 'Hi' });
    state = receive(state, { type: 'assistant_delta', delta: 'Hel' });
    state = act(state, { kind: 'message_sent', id: 'local-1', content: 'And in French?', delivery: 'queue' });
    state = receive(state, queued('m-9', 'And in French?', 'queue'), { type: 'assistant_message', content: 'Hello.', seq: ++seq, ts });
    state = receive(state, { type: 'response_complete', seq: ++seq, ts });
    expect(state.busy).toBe(false);
    // The next answer's start names no message: the oldest queued one started it.
    state = receive(state, { type: 'assistant_delta', delta: 'Bonjour' });
    expect(state.pending).toEqual([]);
    expect(state.items.map((item) => (item.kind === 'user' || item.kind === 'assistant' ? `${item.kind}:${item.content}` : item.kind))).toEqual([
      'user:Hi',
      'assistant:Hello.',
      'user:And in French?',
    ]);
    expect(state.streamingAnswer).toBe('Bonjour');
  });
});

describe('a reload during a run', () => {
  it('shows the waiting messages the session lists and the steers the log holds', () => {
    seq = 0;
    let state = receive(initialViewState, {
      ...session,
      last_seq: 4,
      pending_messages: [
        { message_id: 'm-7', delivery: 'steer', position: 1, content: 'Use the sieve' },
        { message_id: 'm-8', delivery: 'queue', position: 2, content: 'Then explain it' },
      ],
    });
    state = receive(
      state,
      update('agent_start', { max_steps: 5 }),
      update('agent_turn_start', { step: 1 }),
      update('agent_steer', { message_id: 'm-0', step: 2, content: 'Be brief', delivery: 'steer' }),
    );
    expect(state.pending.map((message) => `${message.id}:${message.status}`)).toEqual(['m-7:waiting', 'm-8:waiting']);
    expect(waitingSteers(state.pending, run, state.activeRunId).map((message) => message.id)).toEqual(['m-7']);
    expect(messagesAfterRuns(state).map((message) => message.id)).toEqual(['m-8']);
    expect(state.runs[run]!.steers!.map((steer) => steer.content)).toEqual(['Be brief']);
  });

  it('shows a steer once: where it landed, not again as the user turn the history API keeps after its run', () => {
    const preamble = 'A message from the person while you work (take it into account from now on):\nBe brief';
    const history = (state: ViewState) =>
      reduce(state, { kind: 'history_loaded', sessionId: 's-1', messages: [{ role: 'user', content: preamble, after_seq: 9 }] });
    const log = (state: ViewState) => {
      seq = 0;
      return receive(
        state,
        update('agent_start', { max_steps: 5 }),
        update('agent_steer', { message_id: 'm-0', step: 1, content: 'Be brief', delivery: 'steer' }),
        update('agent_completion', { steps: 1 }),
      );
    };
    const userTurns = (state: ViewState) => state.items.filter((item) => item.kind === 'user');
    const attached = receive(initialViewState, session);
    // The history may load before the log replays, or after.
    expect(userTurns(log(history(attached)))).toEqual([]);
    expect(userTurns(history(log(attached)))).toEqual([]);
  });
});

describe('one branch stopped', () => {
  it('keeps that branch’s receipt, and the run goes on', () => {
    seq = 0;
    let state = receive(initialViewState, session, update('agent_start', { max_steps: 5, strategy: 'research' }));
    state = receive(
      state,
      logged({ type: 'tool_start', node_id: '1.2', step: 1, tool_call_id: 'c1', tool_name: 'web_search', arguments: {} }),
      logged({ type: 'tool_start', node_id: '1.1', step: 1, tool_call_id: 'c2', tool_name: 'web_search', arguments: {} }),
    );
    state = receive(
      state,
      update('agent_node_stopped', {
        node_id: '1.2',
        step: 1,
        by: { id: 'u', name: 'Ada' },
        calls: [{ tool_call_id: 'c1', tool: 'web_search', status: 'cancelled' }],
      }),
    );
    expect(state.runs[run]!.stoppedBranches).toEqual({
      '1.2': { seq: 4, step: 1, by: 'Ada', calls: [{ tool_call_id: 'c1', tool: 'web_search', status: 'cancelled' }] },
    });
    // Its call in flight was cut off with it; its sibling's goes on.
    const tools = (nodeId: string) => state.runs[run]!.branches.find((branch) => branch.nodeId === nodeId)!.steps[0]!.tools.map((tool) => tool.status);
    expect(tools('1.2')).toEqual(['stopped']);
    expect(tools('1.1')).toEqual(['running']);
    expect(state.runs[run]!.end).toBeUndefined();
    expect(state.activeRunId).toBe(run);
  });
});
