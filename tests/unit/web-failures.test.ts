import { describe, expect, it } from 'vitest';
import { parseServerEvent } from '../../frontend/src/lib/socket-client.ts';
import { awaitingAnswer, reduce } from '../../frontend/src/state/reducer.ts';
import { initialViewState, type ViewState } from '../../frontend/src/state/view-state.ts';
import { sessionMessage } from '../helpers/web-session.ts';

const ts = '2026-01-01T00:00:00.000Z';
const session = sessionMessage();
const failure = { type: 'error', code: 'model_error', message: 'The model endpoint failed: connection refused', seq: 1, ts };

/** Every frame goes through the socket client's parser first, as in the app. */
const receive = (state: ViewState, ...frames: Record<string, unknown>[]) =>
  frames.reduce((next, frame) => {
    const event = parseServerEvent(JSON.stringify(frame));
    return event ? reduce(next, { kind: 'server_event', event }) : next;
  }, state);

const kinds = (state: ViewState) => state.items.map((item) => (item.kind === 'failure' ? `failure:${item.code}:${item.message}` : item.kind));

describe('a plain chat answer that failed', () => {
  it('shows “Thinking…” until the failure arrives, then the failure in the answer’s place', () => {
    let state = reduce(receive(initialViewState, session), { kind: 'user_message', id: 'u1', content: 'Hi' });
    expect(awaitingAnswer(state)).toBe(true);
    state = receive(state, failure);
    expect(awaitingAnswer(state)).toBe(false);
    expect(kinds(state)).toEqual(['user', 'failure:model_error:The model endpoint failed: connection refused']);
    // It is a logged event: no notice, and the composer frees up with response_complete.
    expect(state.notice).toBeUndefined();
    state = receive(state, { type: 'response_complete', seq: 2, ts });
    expect(state.busy).toBe(false);
  });

  it('ends a streaming answer where the failure cuts it off', () => {
    let state = reduce(receive(initialViewState, session), { kind: 'user_message', id: 'u1', content: 'Hi' });
    state = receive(state, { type: 'assistant_delta', delta: 'Hel' });
    expect(state.streamingAnswer).toBe('Hel');
    state = receive(state, failure);
    expect(state.streamingAnswer).toBeUndefined();
    expect(awaitingAnswer(state)).toBe(false);
  });

  it('is rebuilt from the log after a reload, after the message it answers', () => {
    let state = receive(initialViewState, { ...session, resumed: true, last_seq: 2 }, failure, { type: 'response_complete', seq: 2, ts });
    state = reduce(state, { kind: 'history_loaded', sessionId: 's-1', messages: [{ role: 'user', content: 'Hi', after_seq: 0 }] });
    expect(kinds(state)).toEqual(['user', 'failure:model_error:The model endpoint failed: connection refused']);
    expect(state).toMatchObject({ busy: false, lastSeq: 2 });
    expect(awaitingAnswer(state)).toBe(false);
    // Replayed again (a reconnect asking from an older seq) it is not shown twice.
    expect(receive(state, failure)).toBe(state);
  });

  it('ends a run the failure belongs to, so that its steps stop “Thinking…”', () => {
    let state = receive(initialViewState, session, { type: 'agent_update', update_type: 'agent_start', max_steps: 3, seq: 1, ts, run_id: 'r1' });
    state = receive(state, { type: 'agent_update', update_type: 'agent_turn_start', step: 1, seq: 2, ts, run_id: 'r1' });
    state = receive(state, { ...failure, seq: 3, run_id: 'r1' });
    expect(state.runs.r1!.end).toEqual({ kind: 'failed', message: 'The model endpoint failed: connection refused' });
  });

  it('is told apart from a refused message, which is a notice and not part of the conversation', () => {
    const state = receive(initialViewState, session, { type: 'error', code: 'run_active', message: 'busy' });
    expect(state.items).toEqual([]);
    expect(state.notice).toEqual({ code: 'run_active', message: 'busy' });
  });
});
