import { randomUUID } from 'node:crypto';
import type { DeltaEvent } from '@stepwise/shared-types';
import type pg from 'pg';
import type { createClient } from 'redis';
import { type ControlBus, type ControlCommand, type ControlHandler, type ControlOutcome, InProcessControlBus, noOutcome } from '../agent/control-bus.ts';
import type { Logger } from '../logger.ts';
import type { Fence, FenceToken } from '../store/store.ts';
import type { Arrival, ArrivingRun, AtShutdown, ClaimOutcome, Interrupted, RunHost, RunQuota, SessionListener, SessionNotice } from '../hosting/run-host.ts';
import { UUID } from '../util/ids.ts';
import { optionalPackage } from '../util/optional-package.ts';

type RedisClient = ReturnType<typeof createClient>;

/** A preview on a session's channel: who sent it, the seq its sockets had then, the delta. */
interface PreviewMessage {
  from: string;
  afterSeq: number;
  delta: DeltaEvent;
}

/** Who holds a session: the instance and, while one goes on, its run. */
export interface SessionHolder {
  instanceId: string;
  runId: string | null;
}

interface InboxMessage {
  kind: 'control' | 'reply';
  requestId: string;
  replyTo?: string;
  runId?: string;
  payload: string;
}

const INBOX = (instanceId: string) => `stepwise:inbox:${instanceId}`;
const SESSION_CHANNEL = (sessionId: string) => `stepwise:session:${sessionId}`;
/** How long a claim waits for another instance's claim for the same user (MAX_RUNS_PER_USER) before it fails. */
const QUOTA_LOCK_TIMEOUT_MS = 5_000;
/** How often a followed session's log is looked at, besides the notices (one may be lost). */
const FOLLOW_LOOK_MS = 1_000;
/** How long a command sent to another instance may take, Redis reconnects included. */
const SEND_TIMEOUT_MS = 10_000;

/**
 * Several Stepwise processes on one PostgreSQL and one Redis. PostgreSQL holds who owns each
 * session (a lease, renewed while the owner lives, so one run per session across instances and
 * one writer of its log, whose seq stays gapless); Redis carries what must travel between them:
 * commands to the instance where a run executes (a stream per instance, so a command survives the
 * receiver's reconnect; a sender retries while Redis itself is away) and "new events" notices
 * (pub/sub; followers also poll the database, so a lost notice delays nothing for long).
 */
export class Cluster implements RunHost {
  readonly instanceId: string;
  private readonly pool: pg.Pool;
  private readonly redis: RedisClient;
  private readonly reader: RedisClient;
  private readonly subscriber: RedisClient;
  /** The sessions this instance holds: the run each lease names, and the lease's generation (its writes' fence). */
  private readonly held = new Map<string, { runId: string | null; generation: number }>();
  /** Leases this instance held and lost to another: writes still made under them are refused (not let through unfenced). */
  private readonly lost = new Map<string, { runId: string | null; generation: number }>();
  private readonly waiting = new Map<string, (outcome: ControlOutcome) => void>();
  private readonly sessionListeners = new Map<string, Set<SessionListener>>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** The looks of the sessions followed here (see follow). */
  private readonly looks = new Set<NodeJS.Timeout>();
  /** Each user's claim under way here (see claimRun). */
  private readonly quotaClaims = new Map<string, Promise<ClaimOutcome>>();
  private lastInboxId = '0-0';
  private closed = false;
  /** Shutting down (see drain). */
  private draining = false;
  private orphanHandler: ((orphan: ArrivingRun) => Promise<Arrival>) | undefined;
  private lostHandler: ((sessionId: string) => void) | undefined;
  readonly controlBus: ClusterControlBus;

  constructor(
    private readonly options: { databaseUrl: string; redisUrl: string; instanceId?: string; leaseMs: number },
    private readonly logger: Logger,
  ) {
    this.instanceId = options.instanceId || randomUUID();
    this.pool = new (optionalPackage<typeof pg>('pg').Pool)({ connectionString: options.databaseUrl, max: 4 });
    this.pool.on('error', (error) => this.logger.warn({ err: error }, 'cluster database connection failed'));
    const reconnectStrategy = (retries: number) => Math.min(100 * 2 ** Math.min(retries, 5), 2_000);
    this.redis = optionalPackage<{ createClient: typeof createClient }>('redis').createClient({ url: options.redisUrl, socket: { reconnectStrategy } });
    this.reader = this.redis.duplicate();
    this.subscriber = this.redis.duplicate();
    for (const client of [this.redis, this.reader, this.subscriber])
      client.on('error', (error: Error) => this.logger.debug({ err: error.message }, 'redis connection error'));
    this.controlBus = new ClusterControlBus(this);
  }

  async start(): Promise<void> {
    // The session_leases table is the store's (PostgreSQL migration 4), made before the cluster starts.
    await Promise.all([this.redis.connect(), this.reader.connect(), this.subscriber.connect()]);
    void this.readInbox();
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
    return (await this.claim(run.sessionId, run.runId)) ? 'go_on' : 'elsewhere';
  }

  /** Answers travel to the run's instance; nothing keeps one for a run that executes nowhere. */
  async keepAnswer(): Promise<boolean> {
    return false;
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

  /**
   * Claims the session for this instance (and `runId` while a run goes on): granted when nobody
   * holds it, its lease ran out (on no run, on `runId` itself, or on a run no longer running: a run
   * left going is taken over by the orphan sweep, and a message arriving first must not take its
   * session from it), this instance holds it without a run, or the run its lease names
   * has ended (its ending is saved before its response_complete is sent, so a message sent on
   * response_complete finds the session free on every instance, even before the run's instance
   * has let go). False: another instance (or a run here) holds it.
   */
  async claim(sessionId: string, runId: string | null): Promise<boolean> {
    const generation = await this.takeLease(this.pool, sessionId, runId, null);
    if (generation === undefined) return false;
    this.holding(sessionId, runId, generation);
    return true;
  }

  /**
   * Claims the session for run `runId` (as `claim`), unless `quota.owner` holds `quota.limit` runs
   * already on the instances together: the runs of their stored chats still running, and the leases
   * that name a run of theirs not yet stored (or still running). The count and the lease are one
   * transaction under a lock on the owner, so two instances' starts for one user are taken in turn.
   */
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
    if (!UUID.test(runId)) throw new Error(`Not a run id: ${runId.slice(0, 64)}`);
    const client = await this.pool.connect();
    let generation: number | undefined;
    let failed: Error | undefined;
    try {
      await client.query('begin');
      // Another instance holding the user's lock for this long is stuck: fail rather than queue behind it.
      await client.query(`set local lock_timeout = '${QUOTA_LOCK_TIMEOUT_MS}ms'`);
      await client.query(`select pg_advisory_xact_lock(hashtext('stepwise:runs-of:' || $1))`, [quota.owner]);
      const { rows } = await client.query(
        `select count(*)::int as held from (
           select runs.id from runs join sessions on sessions.id = runs.session_id
            where sessions.owner = $1 and runs.status = 'running'
           union
           select session_leases.run_id::uuid from session_leases
            where session_leases.owner = $1 and session_leases.run_id is not null and session_leases.expires_at >= now()
              and not exists (select 1 from runs where runs.id = session_leases.run_id::uuid and runs.status <> 'running')
         ) as theirs (id) where id <> $2::uuid`,
        [quota.owner, runId],
      );
      if ((rows[0] as { held: number }).held >= quota.limit) {
        await client.query('rollback');
        return 'at_limit';
      }
      generation = await this.takeLease(client, sessionId, runId, quota.owner);
      await client.query('commit');
    } catch (error) {
      failed = error as Error;
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      // A connection that failed mid-transaction is not handed to the next query.
      client.release(failed);
    }
    if (generation === undefined) return 'held';
    this.holding(sessionId, runId, generation);
    return 'claimed';
  }

  private holding(sessionId: string, runId: string | null, generation: number): void {
    this.held.set(sessionId, { runId, generation });
    this.lost.delete(sessionId);
  }

  /** The claim's statement (see `claim`): the lease's generation when granted. A lease keeps its run's owner while it names the same run. */
  private async takeLease(db: Pick<pg.Pool, 'query'>, sessionId: string, runId: string | null, owner: string | null): Promise<number | undefined> {
    // Leases name runs by id: the query compares them with the runs' uuid keys (through their index).
    if (runId !== null && !UUID.test(runId)) throw new Error(`Not a run id: ${runId.slice(0, 64)}`);
    const { rows } = await db.query(
      `insert into session_leases (session_id, instance_id, run_id, expires_at, owner)
       values ($1, $2, $3, now() + $4 * interval '1 millisecond', $5)
       on conflict (session_id) do update
         set instance_id = excluded.instance_id, run_id = excluded.run_id, expires_at = excluded.expires_at,
             owner = case when excluded.owner is not null then excluded.owner
                          when session_leases.run_id is not distinct from excluded.run_id then session_leases.owner end,
             -- A new holder (or this one after its lease ran out) is a new lease; a live holder claiming again keeps its own.
             generation = case when session_leases.instance_id = excluded.instance_id and session_leases.expires_at >= now()
                               then session_leases.generation else nextval('session_lease_generation') end
       where (session_leases.expires_at < now()
              -- A lease that ran out on a run still going is that run's (the orphan sweep takes it over), not a new claim's.
              and (session_leases.run_id is null or session_leases.run_id = excluded.run_id
                   or not exists (select 1 from runs where runs.id = session_leases.run_id::uuid and runs.status = 'running')))
          or (session_leases.instance_id = excluded.instance_id and (session_leases.run_id is null or session_leases.run_id = excluded.run_id))
          or (session_leases.run_id is distinct from excluded.run_id
              and exists (select 1 from runs where runs.id = session_leases.run_id::uuid and runs.status <> 'running'))
       returning session_id, generation`,
      [sessionId, this.instanceId, runId, this.options.leaseMs, owner],
    );
    return rows.length === 0 ? undefined : Number((rows[0] as { generation: string | number }).generation);
  }

  /**
   * Gives the session up: run `runId` ended, or (null) the command that held it is done. Only a
   * lease that still names it goes: one the session's next run has claimed meanwhile stays.
   */
  async release(sessionId: string, runId: string | null): Promise<void> {
    if (this.held.get(sessionId)?.runId === runId) this.held.delete(sessionId);
    if (this.lost.get(sessionId)?.runId === runId) this.lost.delete(sessionId);
    await this.pool
      .query('delete from session_leases where session_id = $1 and instance_id = $2 and run_id is not distinct from $3', [sessionId, this.instanceId, runId])
      .catch((error: unknown) => {
        this.logger.warn({ err: error, session_id: sessionId }, 'could not release a session lease; it runs out by itself');
      });
  }

  /** Lets the session's lease run out now, its run named: another instance takes the run over at its next look. */
  async letGo(sessionId: string): Promise<void> {
    this.held.delete(sessionId);
    await this.pool
      .query("update session_leases set expires_at = now() - interval '1 millisecond' where session_id = $1 and instance_id = $2", [sessionId, this.instanceId])
      .catch((error: unknown) => this.logger.warn({ err: error, session_id: sessionId }, 'could not hand a session over; its lease runs out by itself'));
  }

  /** Who holds the session now, if anyone does (an expired lease holds nothing). */
  async holder(sessionId: string): Promise<SessionHolder | undefined> {
    const { rows } = await this.pool.query('select instance_id, run_id from session_leases where session_id = $1 and expires_at >= now()', [sessionId]);
    const row = rows[0] as { instance_id: string; run_id: string | null } | undefined;
    return row ? { instanceId: row.instance_id, runId: row.run_id } : undefined;
  }

  /** The fence of this instance's writes to the session: the lease it holds, or the one it lost (then the write is refused). */
  fenceFor(sessionId: string): FenceToken | undefined {
    const lease = this.held.get(sessionId) ?? this.lost.get(sessionId);
    return lease && { sessionId, instanceId: this.instanceId, generation: lease.generation };
  }

  /** The fence of a run's writes (its journal): the lease that names the run. */
  fenceForRun(runId: string): FenceToken | undefined {
    for (const [sessionId, lease] of this.held) if (lease.runId === runId) return { sessionId, instanceId: this.instanceId, generation: lease.generation };
    for (const [sessionId, lease] of this.lost) if (lease.runId === runId) return { sessionId, instanceId: this.instanceId, generation: lease.generation };
    return undefined;
  }

  /** The store's view of the leases (see Fence). */
  get fence(): Fence {
    return { forSession: (sessionId) => this.fenceFor(sessionId), forRun: (runId) => this.fenceForRun(runId) };
  }

  /** Tells the other instances that the session's log grew. */
  notify(sessionId: string): void {
    if (!this.redis.isReady) return; // followers poll the database meanwhile
    void this.redis.publish(SESSION_CHANNEL(sessionId), this.instanceId).catch(() => undefined);
  }

  /**
   * Passes a streaming preview on to the instances whose sockets follow the session (fire and
   * forget: a preview is a hint, its full event follows through the log).
   */
  publishPreview(sessionId: string, delta: DeltaEvent, afterSeq: number): void {
    if (!this.redis.isReady) return;
    const message: PreviewMessage = { from: this.instanceId, afterSeq, delta };
    void this.redis.publish(SESSION_CHANNEL(sessionId), JSON.stringify(message)).catch(() => undefined);
  }

  /**
   * Calls `listener` when another instance says the session's log grew or sends a streaming
   * preview, and every FOLLOW_LOOK_MS to look anyway (a notice lost while Redis was away delays
   * nothing for long); resolves with the unsubscribe. Without Redis the looks go on alone.
   */
  async follow(sessionId: string, listener: SessionListener): Promise<() => void> {
    const look = setInterval(() => listener({ kind: 'look' }), FOLLOW_LOOK_MS);
    look.unref();
    this.looks.add(look);
    let listeners = this.sessionListeners.get(sessionId);
    const first = !listeners;
    if (!listeners) {
      listeners = new Set();
      this.sessionListeners.set(sessionId, listeners);
    }
    listeners.add(listener);
    const unfollow = () => {
      clearInterval(look);
      this.looks.delete(look);
      const current = this.sessionListeners.get(sessionId);
      current?.delete(listener);
      if (current && current.size === 0) {
        this.sessionListeners.delete(sessionId);
        void this.subscriber.unsubscribe(SESSION_CHANNEL(sessionId)).catch(() => undefined);
      }
    };
    if (first) {
      await this.subscriber
        .subscribe(SESSION_CHANNEL(sessionId), (message) => {
          // A notice is the sender's id; a preview is JSON.
          const preview = message.startsWith('{') ? (JSON.parse(message) as PreviewMessage) : undefined;
          if ((preview?.from ?? message) === this.instanceId) return;
          const notice: SessionNotice = preview ? { kind: 'preview', delta: preview.delta, afterSeq: preview.afterSeq } : { kind: 'appended' };
          for (const callback of this.sessionListeners.get(sessionId) ?? []) callback(notice);
        })
        .catch((error: unknown) =>
          this.logger.warn({ err: error, session_id: sessionId }, 'could not follow a session across instances; looking it up meanwhile'),
        );
    }
    return unfollow;
  }

  /** Delivers a command to the run on the instance that executes it; retries while Redis is away. */
  async sendRemote(instanceId: string, runId: string, command: ControlCommand): Promise<ControlOutcome> {
    const requestId = randomUUID();
    const reply = new Promise<ControlOutcome>((resolve) => this.waiting.set(requestId, resolve));
    const deadline = Date.now() + SEND_TIMEOUT_MS;
    const message: InboxMessage = { kind: 'control', requestId, replyTo: this.instanceId, runId, payload: JSON.stringify(command) };
    for (;;) {
      try {
        await this.redis.xAdd(INBOX(instanceId), '*', toFields(message), { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: 1000 } });
        break;
      } catch (error) {
        if (Date.now() > deadline) {
          this.waiting.delete(requestId);
          throw error;
        }
        await sleep(200);
      }
    }
    const timeout = sleep(Math.max(0, deadline - Date.now())).then((): ControlOutcome => noOutcome(command));
    const outcome = await Promise.race([reply, timeout]);
    this.waiting.delete(requestId);
    return outcome;
  }

  /** A command for the session's run, wherever it executes (nothing runs: the command's "none" outcome). */
  sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    return this.controlBus.sendToSession(sessionId, command);
  }

  /** Which dependencies answer now. */
  async health(): Promise<{ database: boolean; redis: boolean }> {
    const database = await this.pool.query('select 1').then(
      () => true,
      () => false,
    );
    const redis = this.redis.isReady
      ? await this.redis.ping().then(
          () => true,
          () => false,
        )
      : false;
    return { database, redis };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of [...this.timers, ...this.looks]) clearInterval(timer);
    for (const [sessionId, { runId }] of [...this.held]) await this.release(sessionId, runId);
    for (const client of [this.reader, this.subscriber, this.redis]) await client.close().catch(() => client.destroy());
    await this.pool.end().catch(() => undefined);
  }

  /** Keeps this instance's leases alive. */
  private async renew(): Promise<void> {
    if (this.closed || this.held.size === 0) return;
    try {
      const { rows } = await this.pool.query(
        `update session_leases set expires_at = now() + $2 * interval '1 millisecond'
         where instance_id = $1 and session_id = any($3) returning session_id`,
        [this.instanceId, this.options.leaseMs, [...this.held.keys()]],
      );
      const kept = new Set(rows.map((row: { session_id: string }) => row.session_id));
      for (const sessionId of [...this.held.keys()]) {
        if (kept.has(sessionId)) continue;
        // Claimed again (or released) while the renewal ran: look once more before stopping anything.
        const holder = await this.holder(sessionId);
        if (!this.held.has(sessionId) || holder?.instanceId === this.instanceId) continue;
        this.logger.warn({ session_id: sessionId }, 'lost the lease of a session to another instance; its run stops here');
        this.lost.set(sessionId, this.held.get(sessionId)!);
        this.held.delete(sessionId);
        this.lostHandler?.(sessionId);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not renew session leases');
    }
  }

  /** Claims the runs of instances that stopped renewing their leases, and hands each to the orphan handler. */
  private async findOrphans(): Promise<void> {
    if (this.closed || this.draining || !this.orphanHandler) return;
    try {
      const { rows } = await this.pool.query(
        `update session_leases set instance_id = $1, expires_at = now() + $2 * interval '1 millisecond', generation = nextval('session_lease_generation')
         where session_id in (select session_id from session_leases where expires_at < now() and run_id is not null limit 10 for update skip locked)
         returning session_id, run_id, generation`,
        [this.instanceId, this.options.leaseMs],
      );
      for (const row of rows as { session_id: string; run_id: string; generation: string | number }[]) {
        // Drained while the look was under way: the run is left to the other instances.
        if (this.draining) {
          await this.letGo(row.session_id);
          continue;
        }
        this.held.set(row.session_id, { runId: row.run_id, generation: Number(row.generation) });
        this.lost.delete(row.session_id);
        this.logger.info({ session_id: row.session_id, run_id: row.run_id }, 'taking over a run whose instance went away');
        const outcome = await this.orphanHandler({ sessionId: row.session_id, runId: row.run_id }).catch((error: unknown) => {
          this.logger.error({ err: error, run_id: row.run_id }, 'could not take over a run');
          return 'failed' as const;
        });
        // Closed (it had ended): the session is nobody's to hold. Not taken yet: its lease runs out
        // now, so the next look (here or on another instance) tries again.
        if (outcome === 'closed') await this.release(row.session_id, row.run_id);
        else if (outcome === 'failed') await this.letGo(row.session_id);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'could not look for orphaned runs');
    }
  }

  /** Reads this instance's inbox (commands for its runs, replies to its commands), from where it left off. */
  private async readInbox(): Promise<void> {
    while (!this.closed) {
      try {
        const streams = await this.reader.xRead({ key: INBOX(this.instanceId), id: this.lastInboxId }, { BLOCK: 1_000, COUNT: 100 });
        for (const stream of (streams as { messages: { id: string; message: Record<string, string> }[] }[] | null) ?? []) {
          for (const entry of stream.messages) {
            this.lastInboxId = entry.id;
            await this.handleInbox(entry.message as unknown as InboxMessage);
          }
        }
      } catch (error) {
        if (this.closed) return;
        this.logger.debug({ err: error instanceof Error ? error.message : String(error) }, 'inbox read failed; retrying');
        await sleep(200);
      }
    }
  }

  private async handleInbox(message: InboxMessage): Promise<void> {
    if (message.kind === 'reply') {
      this.waiting.get(message.requestId)?.(JSON.parse(message.payload) as ControlOutcome);
      return;
    }
    const command = JSON.parse(message.payload) as ControlCommand;
    const outcome = await this.controlBus.send(message.runId!, command);
    const reply: InboxMessage = { kind: 'reply', requestId: message.requestId, payload: JSON.stringify(outcome) };
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        await this.redis.xAdd(INBOX(message.replyTo!), '*', toFields(reply), { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: 1000 } });
        return;
      } catch {
        await sleep(200);
      }
    }
  }
}

/** Commands reach a run here when it executes here, else the instance that holds its session. */
class ClusterControlBus implements ControlBus {
  private readonly local = new InProcessControlBus();
  constructor(private readonly cluster: Cluster) {}

  attach(runId: string, handler: ControlHandler): () => void {
    return this.local.attach(runId, handler);
  }

  /** A command for a run of this instance (its session's other instances send by session, below). */
  send(runId: string, command: ControlCommand): Promise<ControlOutcome> {
    return this.local.send(runId, command);
  }

  /** A command for the session's run wherever it executes. */
  async sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    const holder = await this.cluster.holder(sessionId);
    if (!holder?.runId) return noOutcome(command);
    if (holder.instanceId === this.cluster.instanceId) return this.local.send(holder.runId, command);
    return this.cluster.sendRemote(holder.instanceId, holder.runId, command);
  }
}

function toFields(message: InboxMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(message).filter(([, value]) => value !== undefined)) as Record<string, string>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
