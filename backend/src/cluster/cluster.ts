import { randomUUID } from 'node:crypto';
import { type ControlBus, InProcessControlBus } from '../agent/kernel/control-bus.ts';
import type { Arrival, ArrivingRun, AtShutdown, Hosting, Interrupted, RunHost } from '../hosting/run-host.ts';
import type { Logger } from '../logger.ts';
import { LeaseTable } from '../store/lease-table.ts';
import { ClusterLease } from './cluster-lease.ts';
import { ClusterMessages } from './cluster-messages.ts';

/**
 * Several Stepwise processes on one PostgreSQL and one Redis. PostgreSQL holds who owns each
 * session (a lease, renewed while the owner lives, so one run per session across instances and
 * one writer of its log, whose seq stays gapless: ClusterLease); Redis carries what must travel
 * between them (ClusterMessages). This class is the instance's life: it joins, renews its leases,
 * takes over the runs of instances that went away, drains at shutdown and leaves.
 */
export class Cluster implements RunHost {
  readonly instanceId: string;
  readonly lease: ClusterLease;
  readonly messages: ClusterMessages;
  /** Where the runs executing on this instance take their commands (other instances' commands arrive through its inbox). */
  readonly controlBus: ControlBus = new InProcessControlBus();
  private readonly table: LeaseTable;
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  /** Shutting down (see drain). */
  private draining = false;
  private orphanHandler: ((orphan: ArrivingRun) => Promise<Arrival>) | undefined;
  private lostHandler: ((sessionId: string) => void) | undefined;

  constructor(
    private readonly options: { databaseUrl: string; redisUrl: string; instanceId?: string; leaseMs: number },
    private readonly logger: Logger,
  ) {
    this.instanceId = options.instanceId || randomUUID();
    this.table = LeaseTable.open(options.databaseUrl, options.leaseMs, (error) => this.logger.warn({ err: error }, 'cluster database connection failed'));
    this.lease = new ClusterLease(this.table, this.instanceId, logger);
    this.messages = new ClusterMessages(options.redisUrl, this.instanceId, this.lease, this.controlBus, logger);
  }

  /** The instance's ports: its lease, its router and fan-out (Redis), its control bus. */
  get hosting(): Hosting {
    return { host: this, lease: this.lease, router: this.messages, fanOut: this.messages, controlBus: this.controlBus, shared: true };
  }

  async start(): Promise<void> {
    // The session_leases table is the store's (PostgreSQL migration 4), made before the cluster starts.
    await this.messages.start();
    const every = Math.max(200, Math.floor(this.options.leaseMs / 3));
    this.timers.push(setInterval(() => void this.renew(), every));
    this.timers.push(setInterval(() => void this.findOrphans(), every));
    for (const timer of this.timers) timer.unref();
    this.logger.info({ instance: this.instanceId }, 'joined the cluster (PostgreSQL + Redis)');
  }

  /** Calls `handler` for each run whose owner stopped renewing its lease, once this instance has claimed it. */
  onRunArrived(handler: (orphan: ArrivingRun) => Promise<Arrival>): void {
    this.orphanHandler = handler;
  }

  /** A run left going goes on here when this instance can claim its session; a live instance holding it keeps it. */
  async interrupted(run: ArrivingRun): Promise<Interrupted> {
    return (await this.lease.claim(run.sessionId, run.runId)) ? 'go_on' : 'elsewhere';
  }

  /**
   * Shutting down, runs handed over: this instance takes no orphan any more. Else its own look for
   * orphans (still running until close) could take back the very run it just let go, start it
   * here again, and then delete its lease on close, leaving the run to nobody.
   */
  drain(): AtShutdown {
    this.draining = true;
    return 'hand_over';
  }

  /** Calls `handler` when another instance took a session this one held (it was too slow to renew): its run must stop here. */
  onLostLease(handler: (sessionId: string) => void): void {
    this.lostHandler = handler;
  }

  /** Which dependencies answer now. */
  async health(): Promise<{ database: boolean; redis: boolean }> {
    const [database, redis] = await Promise.all([this.table.ping(), this.messages.healthy()]);
    return { database, redis };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    await this.lease.releaseAll();
    await this.messages.close();
    await this.table.close().catch(() => undefined);
  }

  /** Keeps this instance's leases alive. */
  private async renew(): Promise<void> {
    if (this.closed) return;
    await this.lease.renew((sessionId) => this.lostHandler?.(sessionId));
  }

  /** Claims the runs of instances that stopped renewing their leases, and hands each to the orphan handler. */
  private async findOrphans(): Promise<void> {
    const handler = this.orphanHandler;
    if (this.closed || this.draining || !handler) return;
    await this.lease.takeOrphans(handler, () => this.draining);
  }
}
