// The RunHost port: where a session's run lives and how to reach it. One suite, three adapters: one
// process, an instance among several (leases in PostgreSQL, commands through Redis), and runs that
// live in Restate workflows (a real restate-server).
import { randomUUID } from 'node:crypto';
import {
  type ArrivingRun,
  Cluster,
  type ControlBus,
  InProcessControlBus,
  InProcessRunHost,
  type Logger,
  openSqlStore,
  type PostgresDatabase,
  RestateEngine,
  RestateRunHost,
  type RunHost,
  type SqlStore,
} from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRestate } from '../../scripts/restate.mjs';
import { freePort } from '../fixtures/mcp-servers.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { inProcessKernel } from '../helpers/kernel.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

interface HostUnderTest {
  name: string;
  setup(): Promise<void>;
  host(): RunHost;
  /** Where runs of this host take commands. */
  bus(): ControlBus;
  /** Makes a session with a running run, as the chat layer would have stored it. */
  newRun(sessionId?: string): Promise<{ sessionId: string; runId: string }>;
  teardown(): Promise<void>;
  /** What the host depends on, by the names its health gives them. */
  dependencies: string[];
  /** Runs go on elsewhere or later after a shutdown here. */
  handsOver: boolean;
  /** Other instances share the sessions: a user's quota is counted over them, and a hand-over keeps other runs out. */
  shared: boolean;
  /** A run left going at startup arrives through the arrival handler (its durable execution sets it up). */
  arrivesAfterStartup: boolean;
  /** Answers to a run executing nowhere just now are kept. */
  keepsAnswers: boolean;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

function inProcess(): HostUnderTest {
  const bus = new InProcessControlBus();
  const host = new InProcessRunHost(bus);
  return {
    name: 'in one process',
    setup: () => host.start(),
    host: () => host,
    bus: () => bus,
    newRun: async (sessionId = randomUUID()) => ({ sessionId, runId: randomUUID() }),
    teardown: () => host.close(),
    dependencies: [],
    handsOver: false,
    shared: false,
    arrivesAfterStartup: false,
    keepsAnswers: false,
  };
}

function onCluster(pg: string, redisUrl: string): HostUnderTest {
  let database: { db: PostgresDatabase; url: string; drop: () => Promise<void> } | undefined;
  let store: SqlStore | undefined;
  let cluster: Cluster | undefined;
  return {
    name: 'on several instances (PostgreSQL, Redis)',
    async setup() {
      database = await freshPostgresDatabase(pg);
      store = await openSqlStore(database.db);
      cluster = new Cluster({ databaseUrl: database.url, redisUrl, instanceId: `host-${randomUUID().slice(0, 8)}`, leaseMs: 30_000 }, silent);
      await cluster.start();
    },
    host: () => cluster!,
    bus: () => cluster!.controlBus,
    async newRun(sessionId) {
      const id = sessionId ?? randomUUID();
      if (!sessionId) await store!.createSession(id);
      const runId = randomUUID();
      await store!.createRun({ id: runId, sessionId: id, strategy: 'roa', maxSteps: 1 });
      return { sessionId: id, runId };
    },
    async teardown() {
      await cluster?.close().catch(() => undefined);
      await database?.drop();
    },
    dependencies: ['database', 'redis'],
    handsOver: true,
    shared: true,
    arrivesAfterStartup: false,
    keepsAnswers: false,
  };
}

function onRestate(): HostUnderTest {
  const bus = new InProcessControlBus();
  let restate: Awaited<ReturnType<typeof startTestRestate>> | undefined;
  let host: RestateRunHost | undefined;
  return {
    name: 'with runs in Restate workflows',
    async setup() {
      restate = await startTestRestate();
      const servicePort = await freePort();
      const { kernel, journal } = inProcessKernel(new ScriptedLlmClient(), []);
      const engine = new RestateEngine(
        {
          ingressUrl: restate.ingressUrl,
          adminUrl: restate.adminUrl,
          servicePort,
          serviceHost: '127.0.0.1',
          serviceUrl: `http://127.0.0.1:${servicePort}`,
          identityKeys: [],
        },
        kernel,
        journal,
        silent,
        { inactivityMs: 60_000 },
      );
      host = new RestateRunHost(new InProcessRunHost(bus), engine);
      await host.start();
    },
    host: () => host!,
    bus: () => bus,
    newRun: async (sessionId = randomUUID()) => ({ sessionId, runId: randomUUID() }),
    async teardown() {
      await host?.close().catch(() => undefined);
      await restate?.stop();
    },
    dependencies: ['restate'],
    handsOver: true,
    shared: false,
    arrivesAfterStartup: true,
    keepsAnswers: true,
  };
}

const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;
if ((!pg || !redisUrl) && process.env.REQUIRE_POSTGRES === '1') throw new Error('PostgreSQL and Redis are needed: run the suite with the test command');
const adapters: HostUnderTest[] = [inProcess(), ...(pg && redisUrl ? [onCluster(pg, redisUrl)] : []), onRestate()];

describe.each(adapters)('the run host $name', (adapter) => {
  const arrived: ArrivingRun[] = [];
  beforeAll(async () => {
    await adapter.setup();
    // The chat layer's arrival handler: here it records the run and closes it (nothing to set up).
    adapter.host().onRunArrived(async (run) => {
      arrived.push(run);
      return 'closed';
    });
  }, 120_000);
  afterAll(() => adapter.teardown(), 60_000);

  it('gives a session to one run at a time, and to the next once the first lets go', async () => {
    const host = adapter.host();
    const first = await adapter.newRun();
    const second = await adapter.newRun(first.sessionId);
    expect(await host.claim(first.sessionId, first.runId)).toBe(true);
    // Claiming again for the same run (as a run does when it starts) keeps it.
    expect(await host.claim(first.sessionId, first.runId)).toBe(true);
    expect(await host.claim(second.sessionId, second.runId)).toBe(false);
    // A late release naming another run leaves the hold alone.
    await host.release(first.sessionId, second.runId);
    expect(await host.claim(second.sessionId, second.runId)).toBe(false);
    await host.release(first.sessionId, first.runId);
    expect(await host.claim(second.sessionId, second.runId)).toBe(true);
    await host.release(second.sessionId, second.runId);
  });

  it('claims a run as claim does; where instances share sessions, refuses a run over its user’s quota, counted over them', async () => {
    const host = adapter.host();
    const quota = { owner: `user-${randomUUID()}`, limit: 1 };
    const first = await adapter.newRun();
    const second = await adapter.newRun();
    expect(await host.claimRun(first.sessionId, first.runId, quota)).toBe('claimed');
    const next = await adapter.newRun(first.sessionId);
    expect(await host.claimRun(first.sessionId, next.runId, undefined)).toBe('held');
    // One process counts a user's runs in its run slots, not here.
    expect(await host.claimRun(second.sessionId, second.runId, quota)).toBe(adapter.shared ? 'at_limit' : 'claimed');
    expect(await host.claimRun(second.sessionId, second.runId, { owner: `user-${randomUUID()}`, limit: 1 })).toBe('claimed');
    await host.release(second.sessionId, second.runId);
    // Once the first run lets go, the user may start another.
    await host.release(first.sessionId, first.runId);
    expect(await host.claimRun(second.sessionId, second.runId, quota)).toBe('claimed');
    await host.release(second.sessionId, second.runId);
  });

  it('holds a session for a command (no run), and a run may start inside it', async () => {
    const host = adapter.host();
    const run = await adapter.newRun();
    expect(await host.claim(run.sessionId, null)).toBe(true);
    expect(await host.claim(run.sessionId, run.runId)).toBe(true);
    await host.release(run.sessionId, run.runId);
  });

  it('sends a command to the run that holds the session, and "nothing to do" when none does', async () => {
    const host = adapter.host();
    const run = await adapter.newRun();
    expect(await host.sendToSession(run.sessionId, { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'no_active_run' });
    const seen: string[] = [];
    const detach = adapter.bus().attach(run.runId, (command) => {
      seen.push(command.type);
      return command.type === 'stop' ? { type: 'stop', outcome: 'stopping' } : { type: 'answer', outcome: 'answered' };
    });
    try {
      expect(await host.claim(run.sessionId, run.runId)).toBe(true);
      expect(await host.sendToSession(run.sessionId, { type: 'answer', content: 'Oslo', questionId: 'q_1' })).toEqual({ type: 'answer', outcome: 'answered' });
      expect(await host.sendToSession(run.sessionId, { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'stopping' });
      expect(seen).toEqual(['answer', 'stop']);
    } finally {
      detach();
      await host.release(run.sessionId, run.runId);
    }
    expect(await host.sendToSession(run.sessionId, { type: 'answer', content: 'late' })).toEqual({ type: 'answer', outcome: 'no_pending_input' });
  });

  it('lets a session go at once on a hand-over: the run goes on where it is taken over, and only several instances keep other runs out meanwhile', async () => {
    const host = adapter.host();
    const first = await adapter.newRun();
    const next = await adapter.newRun(first.sessionId);
    expect(await host.claim(first.sessionId, first.runId)).toBe(true);
    await host.letGo(first.sessionId);
    if (adapter.shared) {
      // The run is still going: a message or command arriving before an instance took it over must not take its session.
      expect(await host.claim(next.sessionId, next.runId)).toBe(false);
      expect(await host.claim(first.sessionId, null)).toBe(false);
      expect(await host.claim(first.sessionId, first.runId)).toBe(true);
      await host.release(first.sessionId, first.runId);
    }
    expect(await host.claim(next.sessionId, next.runId)).toBe(true);
    await host.release(next.sessionId, next.runId);
  });

  it('says which of its dependencies answer (none in one process)', async () => {
    const health = await adapter.host().health();
    expect(Object.keys(health).sort()).toEqual(adapter.dependencies);
    expect(Object.values(health).every((up) => up === true)).toBe(true);
  });

  it('goes on at startup with a run left going; a durable run arrives through the arrival handler, and once its execution has ended it is closed', async () => {
    const host = adapter.host();
    const run = await adapter.newRun();
    expect(await host.interrupted(run)).toBe('go_on');
    if (!adapter.arrivesAfterStartup) {
      await host.release(run.sessionId, run.runId);
      expect(arrived).toEqual([]);
      return;
    }
    // Restate executes the run's workflow, which asks this process to set the run up.
    await expect.poll(() => arrived, { timeout: 60_000 }).toContainEqual({ sessionId: run.sessionId, runId: run.runId });
    // The handler closed it, so its workflow ended: the next startup closes it rather than going on.
    await expect.poll(() => host.interrupted(run), { timeout: 60_000 }).toBe('close');
  });

  it('keeps an answer for a run executing nowhere just now, the first answer standing, when it keeps answers at all', async () => {
    const host = adapter.host();
    const run = await adapter.newRun();
    expect(await host.keepAnswer(run.runId, 'q_1', 'Oslo')).toBe(adapter.keepsAnswers);
    expect(await host.keepAnswer(run.runId, 'q_1', 'Bergen')).toBe(false);
  });

  // Last: once drained, no run starts executing here any more.
  it('hands runs over at shutdown when they go on elsewhere or later, and stops them otherwise', () => {
    expect(adapter.host().drain()).toBe(adapter.handsOver ? 'hand_over' : 'stop');
  });
});

describe.skipIf(!pg || !redisUrl)('instances handing runs over at shutdown (PostgreSQL, Redis)', () => {
  let database: { db: PostgresDatabase; url: string; drop: () => Promise<void> } | undefined;
  const clusters: Cluster[] = [];
  let store: SqlStore | undefined;
  beforeAll(async () => {
    database = await freshPostgresDatabase(pg!);
    // The schema (the lease table among it).
    store = await openSqlStore(database.db);
  }, 60_000);
  afterAll(async () => {
    for (const cluster of clusters) await cluster.close().catch(() => undefined);
    await store?.close();
    await database?.drop();
  }, 60_000);

  it('an instance that drained takes back no run it let go: another instance takes it over', async () => {
    const started = async (id: string, arrivals: ArrivingRun[]) => {
      // A short lease, so that each instance looks for orphans several times a second.
      const cluster = new Cluster({ databaseUrl: database!.url, redisUrl: redisUrl!, instanceId: `${id}-${randomUUID().slice(0, 8)}`, leaseMs: 600 }, silent);
      clusters.push(cluster);
      cluster.onRunArrived(async (run) => {
        arrivals.push(run);
        return 'resumed';
      });
      await cluster.start();
      return cluster;
    };
    const onA: ArrivingRun[] = [];
    const onB: ArrivingRun[] = [];
    const a = await started('a', onA);
    const run = { sessionId: randomUUID(), runId: randomUUID() };
    expect(await a.claim(run.sessionId, run.runId)).toBe(true);
    // Shutting down: A drains, then lets its session go for another instance to go on with.
    a.drain();
    await a.letGo(run.sessionId);
    const b = await started('b', onB);
    await expect.poll(() => onB, { timeout: 30_000 }).toEqual([run]);
    expect(onA).toEqual([]);
    await b.release(run.sessionId, run.runId);
  });
});
