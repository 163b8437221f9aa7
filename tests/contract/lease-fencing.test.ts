// Several instances on one PostgreSQL: a run's writes carry the lease they are made under, so an
// instance that stalled past its lease (another took the run over) cannot write into the run's log
// or journal any more. Two real Cluster leases on a real server; Redis is not needed for leases.
import { randomUUID } from 'node:crypto';
import { Cluster, type JournalEntry, type Logger, openSqlStore, PostgresDatabase, StaleLeaseError, type SqlStore } from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';

const url = postgresUrl();
if (!url && process.env.REQUIRE_POSTGRES === '1') throw new Error('No PostgreSQL: run the suite with the test command, which starts one');

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const event = (seq: number, runId: string): LoggedEvent =>
  ({ type: 'agent_update', update_type: 'agent_turn_start', step: seq, seq, ts: new Date().toISOString(), run_id: runId }) as LoggedEvent;
const entry = (position: number, value: string): JournalEntry => ({ position, kind: 'model', key: `call ${position}`, value, step: 1 });

describe.skipIf(!url)('lease fencing on PostgreSQL', () => {
  let database: { db: PostgresDatabase; url: string; drop: () => Promise<void> };
  let storeA: SqlStore;
  let storeB: SqlStore;
  let a: Cluster;
  let b: Cluster;

  beforeAll(async () => {
    database = await freshPostgresDatabase(url!);
    storeA = await openSqlStore(database.db);
    // Each instance has its own store over the same database, fenced by its own leases.
    storeB = await openSqlStore(new PostgresDatabase(database.url));
    const cluster = (id: string) => new Cluster({ databaseUrl: database.url, redisUrl: 'redis://127.0.0.1:1', instanceId: id, leaseMs: 60_000 }, silent);
    a = cluster('a');
    b = cluster('b');
    storeA.fenceWith(a.lease.fence);
    storeB.fenceWith(b.lease.fence);
  });
  afterAll(async () => {
    for (const cluster of [a, b]) await cluster?.close().catch(() => undefined);
    await storeB?.close();
    await database?.drop();
  });

  async function sessionWithRun(): Promise<{ sessionId: string; runId: string }> {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await storeA.createSession(sessionId);
    await storeA.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 5 });
    return { sessionId, runId };
  }

  /** A stalls past its lease; B takes the session over (as its orphan sweep does for a run whose lease ran out). */
  async function takeOver(sessionId: string, runId: string): Promise<void> {
    await database.db.query("update session_leases set expires_at = now() - interval '1 second' where session_id = $1", [sessionId]);
    expect(await b.lease.claim(sessionId, runId)).toBe(true);
  }

  it('refuses the stale instance’s events and journal entries once another instance holds the lease, and writes nothing of them', async () => {
    const { sessionId, runId } = await sessionWithRun();
    expect(await a.lease.claim(sessionId, runId)).toBe(true);
    await storeA.appendEvent(sessionId, event(1, runId));
    await storeA.appendJournal(runId, entry(0, 'from A'));

    await takeOver(sessionId, runId);
    await storeB.appendEvent(sessionId, event(2, runId));
    await storeB.appendJournal(runId, entry(1, 'from B'));

    // A wakes up and goes on writing as if it still held the run.
    await expect(storeA.appendEvent(sessionId, event(3, runId))).rejects.toBeInstanceOf(StaleLeaseError);
    await expect(storeA.appendJournal(runId, entry(1, 'stale A overwrites'))).rejects.toBeInstanceOf(StaleLeaseError);
    await expect(storeA.appendJournal(runId, entry(2, 'stale A appends'))).rejects.toBeInstanceOf(StaleLeaseError);
    await expect(storeA.truncateJournal(runId, 0)).rejects.toBeInstanceOf(StaleLeaseError);

    expect((await storeB.listEvents(sessionId, 0)).map((logged) => logged.seq)).toEqual([1, 2]);
    expect((await storeB.readJournal(runId)).map((kept) => kept.value)).toEqual(['from A', 'from B']);
    // B's own writes go on.
    await storeB.appendJournal(runId, entry(2, 'from B again'));
    await storeB.truncateJournal(runId, 2);
    expect((await storeB.readJournal(runId)).map((kept) => kept.value)).toEqual(['from A', 'from B']);
  });

  it('refuses a lease given up and taken again by the same instance: a new claim is a new generation', async () => {
    const { sessionId, runId } = await sessionWithRun();
    expect(await a.lease.claim(sessionId, runId)).toBe(true);
    const first = a.lease.fenceFor(sessionId)!;
    await takeOver(sessionId, runId);
    await b.lease.release(sessionId, runId);
    expect(await a.lease.claim(sessionId, runId)).toBe(true);
    const second = a.lease.fenceFor(sessionId)!;
    expect(second.generation).toBeGreaterThan(first.generation);
    // A write still made under the first lease (a stalled call from before) would be refused; one under the current lease goes.
    const stale = { forSession: () => first, forRun: () => first };
    storeB.fenceWith(stale);
    try {
      await expect(storeB.appendEvent(sessionId, event(1, runId))).rejects.toBeInstanceOf(StaleLeaseError);
    } finally {
      storeB.fenceWith(b.lease.fence);
    }
    await storeA.appendEvent(sessionId, event(1, runId));
    expect((await storeA.listEvents(sessionId, 0)).map((logged) => logged.seq)).toEqual([1]);
  });

  it('writes unfenced rows (no lease held: a file saved between runs) beside fenced ones, and refuses only the stale one of a batch', async () => {
    const held = await sessionWithRun();
    const free = await sessionWithRun();
    const lost = await sessionWithRun();
    expect(await a.lease.claim(held.sessionId, held.runId)).toBe(true);
    expect(await a.lease.claim(lost.sessionId, lost.runId)).toBe(true);
    await takeOver(lost.sessionId, lost.runId);
    // One batch: the three arrive in the same turn and go in one statement.
    const results = await Promise.allSettled([
      storeA.appendEvent(held.sessionId, event(1, held.runId)),
      storeA.appendEvent(free.sessionId, event(1, free.runId)),
      storeA.appendEvent(lost.sessionId, event(1, lost.runId)),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(StaleLeaseError);
    expect(await storeA.listEvents(lost.sessionId, 0)).toEqual([]);
    expect((await storeA.listEvents(held.sessionId, 0)).length).toBe(1);
    expect((await storeA.listEvents(free.sessionId, 0)).length).toBe(1);
  });
  it('leaves a lease that ran out on a run still going to that run (the orphan sweep’s claim), not to a new message or command', async () => {
    const { sessionId, runId } = await sessionWithRun();
    expect(await a.lease.claim(sessionId, runId)).toBe(true);
    // A dies (or hands the run over at shutdown): its lease runs out, the run is still running in the store.
    await a.lease.letGo(sessionId);
    // Before the next sweep, a message (a new run) or a snapshot command (no run) arrives on B.
    expect(await b.lease.claim(sessionId, randomUUID())).toBe(false);
    expect(await b.lease.claim(sessionId, null)).toBe(false);
    // The run itself is taken over, and once it has ended the session is free again.
    expect(await b.interrupted({ sessionId, runId })).toBe('go_on');
    await storeB.finishRun(runId, { status: 'completed', endReason: 'answered' });
    // A lease that ran out naming a run that ended, or naming no run, is anyone's.
    await b.lease.letGo(sessionId);
    expect(await a.lease.claim(sessionId, null)).toBe(true);
    await a.lease.letGo(sessionId);
    expect(await b.lease.claim(sessionId, null)).toBe(true);
  });
});
