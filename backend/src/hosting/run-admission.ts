import type { ErrorCode, ErrorEvent } from '@stepwise/shared-types';
import type { RunSlots } from '../limits/run-slots.ts';
import type { SessionLease } from './session-lease.ts';

/** How an admitted run (or command) gives back what it took: it ended here, or it is handed to another instance. */
export type Release = (how?: 'ended' | 'handed_over') => Promise<void>;

/** Whether a run (or a command) may start: admitted, with what gives back all it took, or refused, with the error for its sender. */
export type Admission = { kind: 'admitted'; release: Release } | { kind: 'refused'; error: ErrorEvent };

/** A session's log, which a claim may have to catch up: another instance may have written it while it was held elsewhere. */
export interface CatchUpLog {
  syncFromStore(): Promise<void>;
}

/** A run asking to start in a session. */
export interface RunRequest {
  sessionId: string;
  runId: string;
  /** The session's log (caught up once the session is held here). */
  log: CatchUpLog;
  /** The client's share of the run slots: its user's when users sign in, else its address's. */
  client?: string | undefined;
  /** The user, counted against MAX_RUNS_PER_USER (here and, with several instances, on all of them together). */
  user?: string | undefined;
  /**
   * - `new`: a chat, a continued run, a resumed snapshot: refused when the server, the client or the
   *   user has no run to spare, or the session is held elsewhere.
   * - `recovering`: a run that was going already (after a restart, or arriving from an instance that
   *   went away): it is not refused for lack of a slot, nor counted against its user's quota again.
   */
  kind: 'new' | 'recovering';
  /** The command's hold the run starts inside (a continuation, a resumed snapshot): the run's lease takes its place. */
  within?: Hold | undefined;
}

/** A session held for a command (no run): what a run admitted inside it takes over. */
export interface Hold {
  sessionId: string;
  /** True once a run admitted inside the hold holds the session: the hold has nothing left to give back. */
  takenOver: boolean;
}

const reject = (code: ErrorCode, message: string): ErrorEvent => ({ type: 'error', code, message });
/** MAX_RUNS_PER_USER reached, here or on the instances together. */
const userAtLimit = (limit: number | undefined): ErrorEvent =>
  reject('too_many_runs', `You have ${limit} runs going at once, the most one user may have (MAX_RUNS_PER_USER); wait for one to finish`);
const ANOTHER_INSTANCE_RUNS = reject('run_active', 'A response is still in progress (on another instance): stop it or wait for response_complete');

/**
 * Decides whether a run may start, in one place: the session's hold (no other run, here or on another
 * instance), its user's quota (MAX_RUNS_PER_USER, over every instance), a run slot (the server's,
 * the client's and the user's share) and the lease that names the run. An admitted run gets one
 * function that gives all of it back; a refused one an error for its sender, and nothing taken.
 */
export class RunAdmission {
  constructor(
    private readonly lease: SessionLease,
    private readonly slots: RunSlots,
    /** Whether a claim catches the session's log up from the store (other instances write it too). */
    private readonly options: { catchUp: boolean },
  ) {}

  /** Holds the session for a command that starts no run of its own (a snapshot command, a look-up before a continuation). */
  async hold(sessionId: string, log: CatchUpLog): Promise<(Admission & { kind: 'admitted'; hold: Hold }) | (Admission & { kind: 'refused' })> {
    if (!(await this.lease.claim(sessionId, null))) return { kind: 'refused', error: ANOTHER_INSTANCE_RUNS };
    const hold: Hold = { sessionId, takenOver: false };
    try {
      if (this.options.catchUp) await log.syncFromStore();
    } catch (error) {
      await this.lease.release(sessionId, null);
      throw error;
    }
    return { kind: 'admitted', hold, release: async () => (hold.takenOver ? undefined : this.lease.release(sessionId, null)) };
  }

  /** Admits run `request.runId`, or says why not (see RunRequest). */
  async admit(request: RunRequest): Promise<Admission> {
    const { sessionId, runId } = request;
    const refused = await this.claim(request);
    if (refused) return { kind: 'refused', error: refused };
    const slot = this.slots.tryAcquire(request.client, request.user);
    if (typeof slot !== 'function' && request.kind === 'new') {
      await this.lease.release(sessionId, runId);
      return { kind: 'refused', error: this.slotRefusal(slot) };
    }
    const freeSlot = typeof slot === 'function' ? slot : () => undefined;
    if (request.within) request.within.takenOver = true;
    try {
      if (this.options.catchUp && !request.within) await request.log.syncFromStore();
    } catch (error) {
      freeSlot();
      await this.lease.release(sessionId, runId);
      throw error;
    }
    return {
      kind: 'admitted',
      release: async (how = 'ended') => {
        freeSlot();
        await (how === 'handed_over' ? this.lease.letGo(sessionId) : this.lease.release(sessionId, runId));
      },
    };
  }

  /** A run closed without going on here (it had ended, or could not go on) holds its session no more (a later run's hold stays). */
  closed(sessionId: string, runId: string): Promise<void> {
    return this.lease.release(sessionId, runId);
  }

  /** Names the run in the session's lease, within its user's quota for a new run; the refusal, if any. */
  private async claim(request: RunRequest): Promise<ErrorEvent | undefined> {
    const { sessionId, runId } = request;
    if (request.kind === 'recovering') return (await this.lease.claim(sessionId, runId)) ? undefined : ANOTHER_INSTANCE_RUNS;
    const limit = this.slots.userLimit;
    const quota = request.user !== undefined && limit !== undefined ? { owner: request.user, limit } : undefined;
    const claimed = await this.lease.claimRun(sessionId, runId, quota);
    switch (claimed) {
      case 'claimed':
        return undefined;
      case 'at_limit':
        return userAtLimit(limit);
      case 'held':
        return ANOTHER_INSTANCE_RUNS;
      default: {
        const unknown: never = claimed;
        throw new Error(`Unknown claim outcome ${String(unknown)}`);
      }
    }
  }

  private slotRefusal(slot: 'server_busy' | 'client_busy' | 'user_busy'): ErrorEvent {
    switch (slot) {
      case 'user_busy':
        return userAtLimit(this.slots.userLimit);
      case 'client_busy':
        return reject('too_many_runs', `You have ${this.slots.clientLimit} runs going at once, the most one client may have; wait for one to finish`);
      case 'server_busy':
        return reject('server_busy', `The server is at its limit of ${this.slots.limit} concurrent runs; try again shortly`);
      default: {
        const unknown: never = slot;
        throw new Error(`Unknown slot refusal ${String(unknown)}`);
      }
    }
  }
}
