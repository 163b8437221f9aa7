import { describe, expect, it } from 'vitest';
import { reduce } from '../../frontend/src/state/reducer.ts';
import { initialViewState } from '../../frontend/src/state/view-state.ts';
import { sessionMessage } from '../helpers/web-session.ts';

const session = sessionMessage({ model: 'Demo model', demo: true });

describe('a chat message the server refuses', () => {
  it.each(['server_busy', 'too_many_runs', 'rate_limited', 'session_deleted', 'run_active'])(
    'with %s leaves the composer usable again and says why',
    (code) => {
      let state = reduce(initialViewState, { kind: 'connection', state: 'live' });
      state = reduce(state, { kind: 'server_event', event: session as never });
      state = reduce(state, { kind: 'user_message', id: 'u1', content: 'Hello' });
      expect(state.busy).toBe(true);
      state = reduce(state, { kind: 'server_event', event: { type: 'error', code, message: 'Refused.' } });
      expect(state.busy).toBe(false);
      expect(state.notice).toEqual({ code, message: 'Refused.' });
    },
  );
});
