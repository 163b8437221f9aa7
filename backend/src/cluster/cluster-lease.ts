import type { Logger } from '../logger.ts';
import type { ArrivingRun } from '../hosting/run-host.ts';
import type { ClaimOutcome, RunQuota, SessionLease } from '../hosting/session-lease.ts';
import type { LeaseTable, OrphanLease, SessionHolder } from '../store/lease-table.ts';
import type { Fence, FenceToken } from '../store/store.ts';

/** A lease this instance holds (or held): the run it names, and its generation (its writes' fence). */
interface HeldLease {
  runId: string | null;
  generation: number;
}

/**
 * This instance's side of the session leases in PostgreSQL (store/lease-table.ts): which sessions
 * it holds and under which generation, kept alive while it lives; the leases it lost, whose
 * late writes are refused; and the runs it takes over from instances that went away.
 */
export class ClusterLease implements SessionLease {
  /** The sessions this instance holds. */
  private readonly held = new Map<string, HeldLease>();
  /** Leases this instance held and lost to another: writes still made under them are refused (not let through unfenced). */
  private readonly lost = new Map<string, HeldLease>();
  /** Each user's claim under way here (see claimRun). */
  private readonly quotaClaims = new Map<string, Promise<ClaimOutcome>>();

  constructor(
    private readonly table: LeaseTable,
    readonly instanceId: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Claims the session for this instance (and `runId` while a run goes on): see LeaseTable.take.
   * A message sent on response_complete finds the session free on every instance, even before the
   * run's instance has let go: a run's ending is saved before its response_complete is sent.
   */
  async claim(sessionId: string, runId: string | null): Promise<boolean> {
    const generation = await this.table.take(sessionId, this.instanceId, runId, null);
    if (generation === undefined) return false;
    this.holding(sessionId, { runId, generation });
    return true;
  }

  /** Claims the session for run `runId` (as `claim`), unless `quota.owner` is at their limit on the instances together. */
  async claimRun(sessionId: string, runId: string, quota: RunQuota | undefined): Promise<ClaimOutcome> {
    if (!quota) return (await this.claim(sessionId, runId)) ? 'claimed' : 'held';
    // One user's claims here go one at a time, so that a burst of them waits here rather than
    // with a database connection each (the pool's few also renew this instance's leases).
    const turn = (this.quotaClaims.get(quota.owner) ?? Promise.resolve()).then(
      () => this.claimWithinQuota(sessionId, runId, quota),
      () => this.claimWithinQuota(sessionId, runId, quota),
    );
    this.quotaClaims.set(quota.owner, turn);
    try {
      return await turn;
    } finally {
      if (this.quotaClaims.get(quota.owner) === turn) this.quotaClaims.delete(quota.owner);
    }
  }

  private async claimWithinQuota(sessionId: string, runId: string, quota: RunQuota): Promise<ClaimOutcome> {
    const taken = await this.table.takeWithinQuota(sessionId, this.instanceId, runId, quota);
    if (taken.kind === 'at_limit') return 'at_limit';
    if (taken.generation === undefined) return 'held';
    this.holding(sessionId, { runId, generation: taken.generation });
    return 'claimed';
  }

  private holding(sessionId: string, lease: HeldLease): void {
    this.held.set(sessionId, lease);
    this.lost.delete(sessionId);
  }

  /**
   * Gives the session up: run `runId` ended, or (null) the command that held it is done. Only a
   * lease that still names it goes: one the session's next run has claimed meanwhile stays.
   */
  async release(sessionId: string, runId: string | null): Promise<void> {
    if (this.held.get(sessionId)?.runId === runId) this.held.delete(sessionId);
    if (this.lost.get(sessionId)?.runId === runId) this.lost.delete(sessionId);
    await this.table.release(sessionId, this.instanceId, runId).catch((error: unknown) => {
      this.logger.warn({ err: error, session_id: sessionId }, 'could not release a session lease; it runs out by itself');
    });
  }

  /** Lets the session's lease run out now, its run named: another instance takes the run over at its next look. */
  async letGo(sessionId: string): Promise<void> {
    this.held.delete(sessionId);
    await this.table
      .expireNow(sessionId, this.instanceId)
      .catch((error: unknown) => this.logger.warn({ err: error, session_id: sessionId }, 'could not hand a session over; its lease runs out by itself'));
  }

  /** Who holds the session now, if anyone does (an expired lease holds nothing). */
  holder(sessionId: string): Promise<SessionHolder | undefined> {
    return this.table.holder(sessionId);
  }

  /** The fence of this instance's writes to the session: the lease it holds, or the one it lost (then the write is refused). */
  fenceFor(sessionId: string): FenceToken | undefined {
    const lease = this.held.get(sessionId) ?? this.lost.get(sessionId);
    return lease && { sessionId, instanceId: this.instanceId, generation: lease.generation };
  }

  /** The fence of a run's writes (its journal): the lease that names the run. */
  fenceForRun(runId: string): FenceToken | undefined {
    for (const leases of [this.held, this.lost]) {
      for (const [sessionId, lease] of leases) if (lease.runId === runId) return { sessionId, instanceId: this.instanceId, generation: lease.generation };
    }
    return undefined;
  }

  /** The store's view of the leases (see Fence). */
  get fence(): Fence {
    return { forSession: (sessionId) => this.fenceFor(sessionId), forRun: (runId) => this.fenceForRun(runId) };
  }

  /** Keeps this instance's leases alive; calls `lost` for each session another instance took meanwhile. */
  async renew(lost: (sessionId: string) => void): Promise<void> {
    if (this.held.size === 0) return;
    try {
      const kept = await this.table.renew(this.instanceId, [...this.held.keys()]);
      for (const sessionId of [...this.held.keys()]) {
        if (kept.has(sessionId)) continue;
        // Claimed again (or released) while the renewal ran: look once more before stopping anything.
        const holder = await this.holder(sessionId);
        if (!this.held.has(sessionId) || holder?.instanceId === this.instanceId) continue;
        this.logger.warn({ session_id: sessionId }, 'lost the lease of a session to another instance; its run stops here');
        this.lost.set(sessionId, this.held.get(sessionId)!);
        this.held.delete(sessionId);
        lost(sessionId);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not renew session leases');
    }
  }

  /**
   * Claims the runs of instances that stopped renewing their leases and hands each to `arrive`:
   * closed (it had ended), the session is nobody's to hold; not taken yet, its lease runs out now,
   * so the next look (here or on another instance) tries again. `draining`: shutting down, a run
   * taken while the look was under way is left to the other instances.
   */
  async takeOrphans(arrive: (run: ArrivingRun) => Promise<'resumed' | 'closed'>, draining: () => boolean): Promise<void> {
    let orphans: OrphanLease[];
    try {
      orphans = await this.table.takeOrphans(this.instanceId, 10);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not look for orphaned runs');
      return;
    }
    for (const orphan of orphans) {
      if (draining()) {
        await this.letGo(orphan.sessionId);
        continue;
      }
      this.holding(orphan.sessionId, { runId: orphan.runId, generation: orphan.generation });
      this.logger.info({ session_id: orphan.sessionId, run_id: orphan.runId }, 'taking over a run whose instance went away');
      const outcome = await arrive({ sessionId: orphan.sessionId, runId: orphan.runId }).catch((error: unknown) => {
        this.logger.error({ err: error, run_id: orphan.runId }, 'could not take over a run');
        return 'failed' as const;
      });
      if (outcome === 'closed') await this.release(orphan.sessionId, orphan.runId);
      else if (outcome === 'failed') await this.letGo(orphan.sessionId);
    }
  }

  /** Gives up every session this instance holds (it is closing). */
  async releaseAll(): Promise<void> {
    for (const [sessionId, { runId }] of [...this.held]) await this.release(sessionId, runId);
  }
}
