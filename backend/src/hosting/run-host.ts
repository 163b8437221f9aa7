import type { DeltaEvent } from '@stepwise/shared-types';
import { type ControlBus, type ControlCommand, type ControlOutcome, noOutcome } from '../agent/control-bus.ts';

/**
 * What a follower of a session hears: another instance appended to its log, or streamed a preview;
 * or it is time to look at the log anyway (a notice may have been lost on its way).
 */
export type SessionNotice = { kind: 'appended' } | { kind: 'preview'; delta: DeltaEvent; afterSeq: number } | { kind: 'look' };

export type SessionListener = (notice: SessionNotice) => void;

/** What becomes of the runs here when this process shuts down: they are handed over (they go on elsewhere, or later), or stopped. */
export type AtShutdown = 'hand_over' | 'stop';

/**
 * A run that arrives here without a socket having started it here: its instance went away (its
 * lease ran out, this instance now holds it), or the durable engine executes it here after a
 * restart. The arrival handler sets it up from the store and says what became of it.
 */
export interface ArrivingRun {
  sessionId: string;
  runId: string;
}

/** What became of an arriving run: set up here to go on, or closed (it had ended, or cannot go on). */
export type Arrival = 'resumed' | 'closed';

/**
 * What to do, at startup, with a run the store says was going when its process stopped: go on with
 * it here, close it (its durable execution ended, its end unsaved), or leave it to the live
 * instance that holds it.
 */
export type Interrupted = 'go_on' | 'close' | 'elsewhere';

/** How many runs one user may hold at once (MAX_RUNS_PER_USER), on every instance together. */
export interface RunQuota {
  owner: string;
  limit: number;
}

/** A run's claim: held here; held elsewhere (or by another run here); refused, its owner at their limit. */
export type ClaimOutcome = 'claimed' | 'held' | 'at_limit';

/**
 * Where a session's run lives and how to reach it. The chat layer talks to this port only: one
 * process (every session is here), or several instances (a lease in PostgreSQL says which instance
 * holds a session; commands and notices travel through Redis). A run executed by Restate is reached
 * through the same port: Restate runs it where this process (or another) serves its workflow.
 */
export interface RunHost {
  /** This instance's name among several. */
  readonly instanceId: string | undefined;
  /** Holds the session here for run `runId` (or, null, for a command); false: it is held elsewhere (or by another run here). */
  claim(sessionId: string, runId: string | null): Promise<boolean>;
  /**
   * Holds the session here for run `runId`, as `claim` does, when `quota` (if any) lets its owner
   * start one more run: their runs are counted on every instance and the hold taken in one step,
   * so that starts racing on several instances cannot go over the limit together.
   */
  claimRun(sessionId: string, runId: string, quota: RunQuota | undefined): Promise<ClaimOutcome>;
  /** Lets go of the session, when the hold still names `runId` (a later run's hold stays). */
  release(sessionId: string, runId: string | null): Promise<void>;
  /** Lets go of the session now, its run named: another instance goes on with the run (a hand-over). */
  letGo(sessionId: string): Promise<void>;
  /** A command for the session's run, wherever it executes; the "nothing to do" outcome when none runs. */
  sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome>;
  /** `handler` sets up each run that arrives here without a socket (see ArrivingRun); a throw means "not yet", tried again. */
  onRunArrived(handler: (run: ArrivingRun) => Promise<Arrival>): void;
  /** At startup: what becomes of a run its process left going (see Interrupted). */
  interrupted(run: ArrivingRun): Promise<Interrupted>;
  /**
   * Keeps an answer to a question of a run that is not executing anywhere just now (its process
   * restarting): the run takes it when it asks again. False when nothing keeps it, or the question
   * had its answer already (the first one stands).
   */
  keepAnswer(runId: string, questionId: string, answer: string): Promise<boolean>;
  /** `handler` is called when another instance took a session this one held: its run must stop here. */
  onLostLease(handler: (sessionId: string) => void): void;
  /** Calls `listener` when another instance writes the session's log (and now and then to look anyway); resolves with the unsubscribe. Never called in one process. */
  follow(sessionId: string, listener: SessionListener): Promise<() => void>;
  /** Tells the other instances that the session's log grew. */
  notify(sessionId: string): void;
  /** Passes a streaming preview on to the instances whose clients follow the session. */
  publishPreview(sessionId: string, delta: DeltaEvent, afterSeq: number): void;
  /** Which shared dependencies answer now (none in one process). */
  health(): Promise<Record<string, boolean>>;
  start(): Promise<void>;
  /** Shutting down: no run starts executing here any more. Says whether the runs here are handed over or stopped. */
  drain(): AtShutdown;
  close(): Promise<void>;
}

/**
 * One process: every session is here. A hold is granted unless another run of this process holds
 * the session; commands reach the session's run through the process's control bus.
 */
export class InProcessRunHost implements RunHost {
  readonly instanceId = undefined;
  private readonly held = new Map<string, string | null>();

  constructor(private readonly bus: ControlBus) {}

  async claim(sessionId: string, runId: string | null): Promise<boolean> {
    const holder = this.held.get(sessionId);
    if (holder !== undefined && holder !== null && runId !== holder) return false;
    this.held.set(sessionId, runId);
    return true;
  }

  /** One process: the run slots count a user's runs (RunSlots), so the quota is not this host's. */
  async claimRun(sessionId: string, runId: string): Promise<ClaimOutcome> {
    return (await this.claim(sessionId, runId)) ? 'claimed' : 'held';
  }

  async release(sessionId: string, runId: string | null): Promise<void> {
    if (this.held.get(sessionId) === runId) this.held.delete(sessionId);
  }

  async letGo(sessionId: string): Promise<void> {
    this.held.delete(sessionId);
  }

  async sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    const runId = this.held.get(sessionId);
    return runId ? this.bus.send(runId, command) : noOutcome(command);
  }

  /** Nothing arrives in one process: every run here was started here. */
  onRunArrived(): void {}
  onLostLease(): void {}

  async interrupted(): Promise<Interrupted> {
    return 'go_on';
  }

  async keepAnswer(): Promise<boolean> {
    return false;
  }

  async follow(): Promise<() => void> {
    return () => undefined;
  }

  notify(): void {}
  publishPreview(): void {}

  async health(): Promise<Record<string, boolean>> {
    return {};
  }

  async start(): Promise<void> {}
  /** One process: its runs stop with it. */
  drain(): AtShutdown {
    return 'stop';
  }

  async close(): Promise<void> {}
}
