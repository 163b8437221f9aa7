import type { ErrorEvent } from '@stepwise/shared-types';
import type { AgentControl } from '../agent/kernel/agent-control.ts';
import type { Admission } from '../hosting/run-admission.ts';
import { reject } from './run-commands.ts';

/** What is running in a session: a plain chat answer or an agent run. */
export interface ActiveResponse {
  runId: string;
  control: AgentControl;
  done: Promise<void>;
  /** The log's count of response_complete events when it began: once it grows, the response has ended for its clients. */
  completionsBefore: number;
  /** What it took to start (its run slot, its session's lease), given back when it ends. */
  admission: Admission & { kind: 'admitted' };
  /** A plain chat answer (it reads no steers: messages sent meanwhile are queued). */
  plain: boolean;
}

export const RUN_ACTIVE = reject('run_active', 'A response is still in progress: stop it or wait for response_complete');
export const SESSION_DELETED = reject('session_deleted', 'This chat was deleted; start a new one');

/**
 * What a session is doing; every check and change of it goes through it, switched exhaustively.
 * - `idle`: nothing runs; a message may start something.
 * - `admitting`: asking whether a run may start (its slot, its user's quota, its session's lease).
 * - `holding`: a snapshot command or a continuation works; nothing else may start meanwhile.
 * - `running`: an answer or a run is in progress (it may have begun inside a holding command).
 * - `deleted`: everything is refused; a response still winding down is kept until it has ended.
 */
export type SessionState =
  | { kind: 'idle' }
  | { kind: 'admitting' }
  | { kind: 'holding' }
  | { kind: 'running'; response: ActiveResponse }
  | { kind: 'deleted'; response: ActiveResponse | undefined };

/** The answer or run in progress, if any (also while a deleted session's run winds down). */
export function activeOf(state: SessionState): ActiveResponse | undefined {
  switch (state.kind) {
    case 'running':
    case 'deleted':
      return state.response;
    case 'idle':
    case 'admitting':
    case 'holding':
      return undefined;
    default:
      return unexpectedState(state);
  }
}

/** Why nothing new may start now, or undefined when something may: the one place that says so. */
export function refusalOf(state: SessionState): ErrorEvent | undefined {
  switch (state.kind) {
    case 'idle':
      return undefined;
    case 'admitting':
    case 'holding':
    case 'running':
      return RUN_ACTIVE;
    case 'deleted':
      return SESSION_DELETED;
    default:
      return unexpectedState(state);
  }
}

export function unexpectedState(state: never): never {
  throw new Error(`Unknown session state ${JSON.stringify(state)}`);
}

/**
 * A session's row in the store, made the first time something is written in it: a page that
 * connects and leaves (or a client cycling connections) leaves no row behind.
 */
export class SessionRow {
  private stored: Promise<void> | undefined;

  constructor(
    private readonly create: () => Promise<unknown>,
    stored: boolean,
  ) {
    if (stored) this.stored = Promise.resolve();
  }

  /** Resolves once the row is stored (a failed attempt is tried again next time). */
  ensure(): Promise<void> {
    this.stored ??= this.create().then(
      () => undefined,
      (error: unknown) => {
        this.stored = undefined;
        throw error;
      },
    );
    return this.stored;
  }

  /** Whether anything was ever written in the session (it has, or is getting, its row). */
  get written(): boolean {
    return this.stored !== undefined;
  }
}
