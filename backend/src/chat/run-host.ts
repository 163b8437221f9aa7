import type { DeltaEvent } from '@stepwise/shared-types';
import { type ControlBus, type ControlCommand, type ControlOutcome, noOutcome } from '../agent/control-bus.ts';

/** What another instance says of a session it writes: its log grew (no argument), or a streaming preview. */
export type SessionListener = (preview?: { delta: DeltaEvent; afterSeq: number }) => void;

/** A run whose instance went away, now this instance's to go on with. */
export interface OrphanedRun {
  sessionId: string;
  runId: string;
}

/**
 * Where a session's run lives and how to reach it. The chat layer talks to this port only: one
 * process (every session is here), or several instances (a lease in PostgreSQL says which instance
 * holds a session; commands and notices travel through Redis). A run executed by Restate is reached
 * through the same port: Restate runs it where this process (or another) serves its workflow.
 */
export interface RunHost {
  /** True when other instances share the sessions: logs are followed across them, runs are handed over at shutdown. */
  readonly shared: boolean;
  /** This instance's name among several. */
  readonly instanceId: string | undefined;
  /** Holds the session here for run `runId` (or, null, for a command); false: it is held elsewhere (or by another run here). */
  claim(sessionId: string, runId: string | null): Promise<boolean>;
  /** Lets go of the session, when the hold still names `runId` (a later run's hold stays). */
  release(sessionId: string, runId: string | null): Promise<void>;
  /** Lets go of the session now, its run named: another instance goes on with the run (a hand-over). */
  letGo(sessionId: string): Promise<void>;
  /** A command for the session's run, wherever it executes; the "nothing to do" outcome when none runs. */
  sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome>;
  /** `handler` is called for each run whose instance went away, once this one holds it. */
  onOrphanedRun(handler: (orphan: OrphanedRun) => Promise<void>): void;
  /** `handler` is called when another instance took a session this one held: its run must stop here. */
  onLostLease(handler: (sessionId: string) => void): void;
  /** Calls `listener` when another instance writes the session's log; resolves with the unsubscribe. */
  follow(sessionId: string, listener: SessionListener): Promise<() => void>;
  /** Tells the other instances that the session's log grew. */
  notify(sessionId: string): void;
  /** Passes a streaming preview on to the instances whose clients follow the session. */
  publishPreview(sessionId: string, delta: DeltaEvent, afterSeq: number): void;
  /** Which shared dependencies answer now (none in one process). */
  health(): Promise<Record<string, boolean>>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * One process: every session is here. A hold is granted unless another run of this process holds
 * the session; commands reach the session's run through the process's control bus.
 */
export class InProcessRunHost implements RunHost {
  readonly shared = false;
  readonly instanceId = undefined;
  private readonly held = new Map<string, string | null>();

  constructor(private readonly bus: ControlBus) {}

  async claim(sessionId: string, runId: string | null): Promise<boolean> {
    const holder = this.held.get(sessionId);
    if (holder !== undefined && holder !== null && runId !== holder) return false;
    this.held.set(sessionId, runId);
    return true;
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

  onOrphanedRun(): void {}
  onLostLease(): void {}

  async follow(): Promise<() => void> {
    return () => undefined;
  }

  notify(): void {}
  publishPreview(): void {}

  async health(): Promise<Record<string, boolean>> {
    return {};
  }

  async start(): Promise<void> {}
  async close(): Promise<void> {}
}
