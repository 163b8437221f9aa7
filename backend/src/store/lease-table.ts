import { type Expression, type ExpressionBuilder, type Generated, Kysely, PostgresDialect, type SqlBool, sql } from 'kysely';
import type pg from 'pg';
import { UUID } from '../util/ids.ts';
import { optionalPackage } from '../util/optional-package.ts';

type Time = Date | string;

/** The tables the leases read: their own (PostgreSQL migrations 4, 7, 8), and runs and sessions to count a user's runs. */
interface LeaseTables {
  session_leases: {
    session_id: string;
    instance_id: string;
    run_id: string | null;
    expires_at: Time;
    owner: string | null;
    generation: Generated<number | string>;
  };
  runs: { id: string; session_id: string; status: string };
  sessions: { id: string; owner: string };
}

type Db = Kysely<LeaseTables>;
type Leases = ExpressionBuilder<LeaseTables, 'session_leases'>;

/** Who holds a session: the instance and, while one goes on, its run. */
export interface SessionHolder {
  instanceId: string;
  runId: string | null;
}

/** A lease taken over from an instance that stopped renewing it, with the run it names. */
export interface OrphanLease {
  sessionId: string;
  runId: string;
  generation: number;
}

/** How long a claim waits for another instance's claim for the same user (MAX_RUNS_PER_USER) before it fails. */
const QUOTA_LOCK_TIMEOUT_MS = 5_000;

const inMs = (ms: number) => sql<Time>`now() + ${ms} * interval '1 millisecond'`;
/** Leases name runs by id: compared with the runs' uuid keys (through their index). */
const asUuid = (column: Expression<string | null>) => sql<string>`${column}::uuid`;

/**
 * The session leases in PostgreSQL, the instances' one place of truth about who holds each session
 * (and its run). Every statement is here: a claim (with a user's quota, in one transaction under a
 * lock on the user), a release, a hand-over, renewals and the sweep for leases that ran out.
 */
export class LeaseTable {
  private constructor(
    private readonly db: Db,
    private readonly leaseMs: number,
  ) {}

  /** A table over its own few connections to `databaseUrl` (the store's migrations made it). */
  static open(databaseUrl: string, leaseMs: number, onError: (error: Error) => void): LeaseTable {
    const pool: pg.Pool = new (optionalPackage<typeof pg>('pg').Pool)({ connectionString: databaseUrl, max: 4 });
    pool.on('error', onError);
    return new LeaseTable(new Kysely<LeaseTables>({ dialect: new PostgresDialect({ pool }) }), leaseMs);
  }

  /**
   * Takes the session's lease for `instanceId` (and `runId`); the lease's generation when granted.
   * Granted when nobody holds it, its lease ran out (on no run, on `runId` itself, or on a run no
   * longer running: a run left going is the orphan sweep's), the instance holds it without a run
   * or for this run, or the run the lease names has ended. A lease keeps its run's owner while it
   * names the same run; a new holder (or the same one after its lease ran out) is a new generation.
   */
  async take(sessionId: string, instanceId: string, runId: string | null, owner: string | null, db: Db = this.db): Promise<number | undefined> {
    if (runId !== null && !UUID.test(runId)) throw new Error(`Not a run id: ${runId.slice(0, 64)}`);
    const row = await db
      .insertInto('session_leases')
      .values({ session_id: sessionId, instance_id: instanceId, run_id: runId, expires_at: inMs(this.leaseMs), owner })
      .onConflict((conflict) =>
        conflict
          .column('session_id')
          .doUpdateSet({
            instance_id: (eb) => eb.ref('excluded.instance_id'),
            run_id: (eb) => eb.ref('excluded.run_id'),
            expires_at: (eb) => eb.ref('excluded.expires_at'),
            owner: sql`case when excluded.owner is not null then excluded.owner
                            when session_leases.run_id is not distinct from excluded.run_id then session_leases.owner end`,
            generation: sql`case when session_leases.instance_id = excluded.instance_id and session_leases.expires_at >= now()
                                 then session_leases.generation else nextval('session_lease_generation') end`,
          })
          .where((eb) => {
            const leaseRun = eb.ref('session_leases.run_id');
            const newRun = eb.ref('excluded.run_id');
            const runOfLease = (status: 'running' | 'ended') =>
              eb.exists(
                eb
                  .selectFrom('runs')
                  .select(sql`1`.as('one'))
                  .where('runs.id', '=', asUuid(leaseRun))
                  .where('runs.status', status === 'running' ? '=' : '<>', 'running'),
              );
            return eb.or([
              eb.and([
                eb('session_leases.expires_at', '<', sql<Time>`now()`),
                eb.or([eb(leaseRun, 'is', null), eb(leaseRun, '=', newRun), eb.not(runOfLease('running'))]),
              ]),
              eb.and([eb('session_leases.instance_id', '=', eb.ref('excluded.instance_id')), eb.or([eb(leaseRun, 'is', null), eb(leaseRun, '=', newRun)])]),
              eb.and([eb(leaseRun, 'is distinct from', newRun), runOfLease('ended')]),
            ]);
          }),
      )
      .returning(['session_id', 'generation'])
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.generation);
  }

  /**
   * Takes the lease for run `runId` (as `take`) unless `quota.owner` holds `quota.limit` runs
   * already on the instances together: the runs of their stored chats still running, and the leases
   * that name a run of theirs not yet stored (or still running). The count and the lease are one
   * transaction under a lock on the owner, so two instances' starts for one user are taken in turn.
   */
  async takeWithinQuota(
    sessionId: string,
    instanceId: string,
    runId: string,
    quota: { owner: string; limit: number },
  ): Promise<{ kind: 'at_limit' } | { kind: 'taken'; generation: number | undefined }> {
    if (!UUID.test(runId)) throw new Error(`Not a run id: ${runId.slice(0, 64)}`);
    return this.db.transaction().execute(async (tx) => {
      // Another instance holding the user's lock for this long is stuck: fail rather than queue behind it.
      await sql`set local lock_timeout = ${sql.lit(`${QUOTA_LOCK_TIMEOUT_MS}ms`)}`.execute(tx);
      await sql`select pg_advisory_xact_lock(hashtext(${`stepwise:runs-of:${quota.owner}`}))`.execute(tx);
      const stored = tx
        .selectFrom('runs')
        .innerJoin('sessions', 'sessions.id', 'runs.session_id')
        .select('runs.id')
        .where('sessions.owner', '=', quota.owner)
        .where('runs.status', '=', 'running');
      const leased = tx
        .selectFrom('session_leases')
        .select(asUuid(sql.ref('session_leases.run_id')).as('id'))
        .where('session_leases.owner', '=', quota.owner)
        .where('session_leases.run_id', 'is not', null)
        .where('session_leases.expires_at', '>=', sql<Time>`now()`)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('runs')
                .select(sql`1`.as('one'))
                .where('runs.id', '=', asUuid(eb.ref('session_leases.run_id')))
                .where('runs.status', '<>', 'running'),
            ),
          ),
        );
      const { held } = await tx
        .selectFrom(stored.union(leased).as('theirs'))
        .select(sql<number>`count(*)::int`.as('held'))
        .where(sql<SqlBool>`theirs.id <> ${runId}::uuid`)
        .executeTakeFirstOrThrow();
      if (held >= quota.limit) return { kind: 'at_limit' };
      return { kind: 'taken', generation: await this.take(sessionId, instanceId, runId, quota.owner, tx) };
    });
  }

  /** Deletes the instance's lease of the session while it names `runId` (null: a command's hold). */
  async release(sessionId: string, instanceId: string, runId: string | null): Promise<void> {
    await this.db
      .deleteFrom('session_leases')
      .where('session_id', '=', sessionId)
      .where('instance_id', '=', instanceId)
      .where((eb) => (runId === null ? eb('run_id', 'is', null) : eb('run_id', '=', runId)))
      .execute();
  }

  /** Lets the instance's lease of the session run out now, its run named: another instance takes the run over at its next look. */
  async expireNow(sessionId: string, instanceId: string): Promise<void> {
    await this.db
      .updateTable('session_leases')
      .set({ expires_at: sql<Time>`now() - interval '1 millisecond'` })
      .where('session_id', '=', sessionId)
      .where('instance_id', '=', instanceId)
      .execute();
  }

  /** Who holds the session now, if anyone does (an expired lease holds nothing). */
  async holder(sessionId: string): Promise<SessionHolder | undefined> {
    const row = await this.db
      .selectFrom('session_leases')
      .select(['instance_id', 'run_id'])
      .where('session_id', '=', sessionId)
      .where('expires_at', '>=', sql<Time>`now()`)
      .executeTakeFirst();
    return row ? { instanceId: row.instance_id, runId: row.run_id } : undefined;
  }

  /** Renews the instance's leases of `sessionIds`; the sessions whose leases it still held. */
  async renew(instanceId: string, sessionIds: string[]): Promise<Set<string>> {
    const rows = await this.db
      .updateTable('session_leases')
      .set({ expires_at: inMs(this.leaseMs) })
      .where('instance_id', '=', instanceId)
      .where('session_id', 'in', sessionIds)
      .returning('session_id')
      .execute();
    return new Set(rows.map((row) => row.session_id));
  }

  /** Takes over (for `instanceId`, under new generations) up to `limit` leases that ran out on a run. */
  async takeOrphans(instanceId: string, limit: number): Promise<OrphanLease[]> {
    const rows = await this.db
      .updateTable('session_leases')
      .set({ instance_id: instanceId, expires_at: inMs(this.leaseMs), generation: sql`nextval('session_lease_generation')` })
      .where('session_id', 'in', (eb: Leases) =>
        eb
          .selectFrom('session_leases')
          .select('session_id')
          .where('expires_at', '<', sql<Time>`now()`)
          .where('run_id', 'is not', null)
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returning(['session_id', 'run_id', 'generation'])
      .execute();
    return rows.map((row) => ({ sessionId: row.session_id, runId: row.run_id!, generation: Number(row.generation) }));
  }

  /** Whether the database answers. */
  async ping(): Promise<boolean> {
    return sql`select 1`.execute(this.db).then(
      () => true,
      () => false,
    );
  }

  close(): Promise<void> {
    return this.db.destroy();
  }
}
