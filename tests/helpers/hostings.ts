// The adapters of the hosting ports (SessionLease, RunRouter, LogFanOut, RunHost), as the contract
// suites set them up: one process, an instance among several (leases in PostgreSQL, commands and
// notices through Redis), and runs that live in Restate workflows (a real restate-server).
import { randomUUID } from 'node:crypto';
import {
  Cluster,
  type Hosting,
  inProcessHosting,
  type Logger,
  openSqlStore,
  type PostgresDatabase,
  RestateEngine,
  restateHosting,
  type SqlStore,
} from '@stepwise/backend';
import { startTestRestate } from '../../scripts/restate.mjs';
import { freePort } from '../fixtures/mcp-servers.ts';
import { freshPostgresDatabase, postgresUrl } from './databases.ts';
import { inProcessKernel } from './kernel.ts';
import { ScriptedLlmClient } from './scripted-llm-client.ts';

export interface HostingUnderTest {
  name: string;
  setup(): Promise<void>;
  /** The ports, once set up. */
  ports(): Hosting;
  /** Another instance's ports on the same shared dependencies (several instances only). */
  other?: () => Hosting;
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

export const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

export function inProcess(): HostingUnderTest {
  const hosting = inProcessHosting();
  return {
    name: 'in one process',
    setup: () => hosting.host.start(),
    ports: () => hosting,
    newRun: async (sessionId = randomUUID()) => ({ sessionId, runId: randomUUID() }),
    teardown: () => hosting.host.close(),
    dependencies: [],
    handsOver: false,
    shared: false,
    arrivesAfterStartup: false,
    keepsAnswers: false,
  };
}

/** Two instances on one PostgreSQL and one Redis; the suites use the first, and the second where instances meet. */
export function onCluster(pg: string, redisUrl: string, options: { leaseMs?: number } = {}): HostingUnderTest {
  let database: { db: PostgresDatabase; url: string; drop: () => Promise<void> } | undefined;
  let store: SqlStore | undefined;
  const clusters: Cluster[] = [];
  return {
    name: 'on several instances (PostgreSQL, Redis)',
    async setup() {
      database = await freshPostgresDatabase(pg);
      store = await openSqlStore(database.db);
      for (const id of ['a', 'b']) {
        const cluster = new Cluster(
          { databaseUrl: database.url, redisUrl, instanceId: `host-${id}-${randomUUID().slice(0, 8)}`, leaseMs: options.leaseMs ?? 30_000 },
          silent,
        );
        clusters.push(cluster);
        await cluster.start();
      }
    },
    ports: () => clusters[0]!.hosting,
    other: () => clusters[1]!.hosting,
    async newRun(sessionId) {
      const id = sessionId ?? randomUUID();
      if (!sessionId) await store!.createSession(id);
      const runId = randomUUID();
      await store!.createRun({ id: runId, sessionId: id, strategy: 'roa', maxSteps: 1 });
      return { sessionId: id, runId };
    },
    async teardown() {
      for (const cluster of clusters) await cluster.close().catch(() => undefined);
      await database?.drop();
    },
    dependencies: ['database', 'redis'],
    handsOver: true,
    shared: true,
    arrivesAfterStartup: false,
    keepsAnswers: false,
  };
}

/** Restate over one process: its own are the run host and the router; lease and fan-out are the process's. */
export function onRestate(): HostingUnderTest {
  let restate: Awaited<ReturnType<typeof startTestRestate>> | undefined;
  let hosting: Hosting | undefined;
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
      hosting = restateHosting(inProcessHosting(), engine);
      await hosting.host.start();
    },
    ports: () => hosting!,
    newRun: async (sessionId = randomUUID()) => ({ sessionId, runId: randomUUID() }),
    async teardown() {
      await hosting?.host.close().catch(() => undefined);
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

/** Two instances on PostgreSQL and Redis, when the test command started them. */
export function clusterUnderTest(options: { leaseMs?: number } = {}): HostingUnderTest | undefined {
  return pg && redisUrl ? onCluster(pg, redisUrl, options) : undefined;
}

/** The adapters to run a suite over: in one process, on several instances (when PostgreSQL and Redis are there), and with Restate when asked. */
export function hostingsUnderTest(options: { restate: boolean }): HostingUnderTest[] {
  if ((!pg || !redisUrl) && process.env.REQUIRE_POSTGRES === '1') throw new Error('PostgreSQL and Redis are needed: run the suite with the test command');
  return [inProcess(), ...(pg && redisUrl ? [onCluster(pg, redisUrl)] : []), ...(options.restate ? [onRestate()] : [])];
}
