import { parseServerEvent } from '../../frontend/src/lib/socket-client.ts';
import { reduce } from '../../frontend/src/state/reducer.ts';
import type { ViewState } from '../../frontend/src/state/view-state.ts';

/** The `session` frame a server sends on attach, for the web app's state tests. */
export const testSession = {
  type: 'session',
  session_id: 's-1',
  protocol: 1,
  model: 'scripted',
  limits: { max_steps_default: 4, max_steps_limit: 8 },
  tools: [],
};

/** What arrives from the socket: every frame goes through the client's parser, then the reducer, as in the app. */
export function receive(state: ViewState, ...values: Record<string, unknown>[]): ViewState {
  return values.reduce((next, value) => {
    const event = parseServerEvent(JSON.stringify(value));
    return event ? reduce(next, { kind: 'server_event', event }) : next;
  }, state);
}
