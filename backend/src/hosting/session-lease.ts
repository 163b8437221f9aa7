/** How many runs one user may hold at once (MAX_RUNS_PER_USER), on every instance together. */
export interface RunQuota {
  owner: string;
  limit: number;
}

/** A run's claim: held here; held elsewhere (or by another run here); refused, its owner at their limit. */
export type ClaimOutcome = 'claimed' | 'held' | 'at_limit';

/**
 * Who holds a session: one process (every session is here), or one of several instances (a lease
 * in PostgreSQL). One run per session, wherever it executes; one writer of its log.
 */
export interface SessionLease {
  /** Holds the session here for run `runId` (or, null, for a command); false: it is held elsewhere (or by another run here). */
  claim(sessionId: string, runId: string | null): Promise<boolean>;
  /**
   * Holds the session here for run `runId`, as `claim` does, when `quota` (if any) lets its owner
   * start one more run: where instances share sessions their runs are counted on every instance and
   * the hold taken in one step, so that starts racing on several instances cannot go over the limit
   * together (one process counts a user's runs in its run slots instead).
   */
  claimRun(sessionId: string, runId: string, quota: RunQuota | undefined): Promise<ClaimOutcome>;
  /** Lets go of the session, when the hold still names `runId` (a later run's hold stays). */
  release(sessionId: string, runId: string | null): Promise<void>;
  /** Lets go of the session now, its run named: another instance goes on with the run (a hand-over). */
  letGo(sessionId: string): Promise<void>;
}

/** One process: a hold is granted unless another run of this process holds the session. */
export class InProcessLease implements SessionLease {
  private readonly held = new Map<string, string | null>();

  /** The run that holds the session here, if one does. */
  runOf(sessionId: string): string | undefined {
    return this.held.get(sessionId) ?? undefined;
  }

  async claim(sessionId: string, runId: string | null): Promise<boolean> {
    const holder = this.held.get(sessionId);
    if (holder !== undefined && holder !== null && runId !== holder) return false;
    this.held.set(sessionId, runId);
    return true;
  }

  /** One process: the run slots count a user's runs (RunSlots), so the quota is not the lease's. */
  async claimRun(sessionId: string, runId: string): Promise<ClaimOutcome> {
    return (await this.claim(sessionId, runId)) ? 'claimed' : 'held';
  }

  async release(sessionId: string, runId: string | null): Promise<void> {
    if (this.held.get(sessionId) === runId) this.held.delete(sessionId);
  }

  async letGo(sessionId: string): Promise<void> {
    this.held.delete(sessionId);
  }
}
