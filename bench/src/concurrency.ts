// 3. N sessions in lockstep, each a three-step run (9 model calls) against a model that takes
// 250 ms per call: how late each reply reaches its client. Stepwise on each store, against the
// bare openai SDK making the same calls for N sessions in one process of its own (the floor: what
// any server built on that SDK starts from), each N in turn on every side. Each side is a new
// process per N, warmed up first by an untimed lockstep of the same shape in sessions of its own
// (N sessions, WARM_UP_SESSIONS at most: 90 to 1,800 model calls), as a server in use has long been.
import type { LockstepClient } from './frameworks.ts';
import { cpuMs, currentRss, type LockstepResult, peakRss, startModelServer, startWorker } from './processes.ts';
import { log, now, type Settings, sleep } from './settings.ts';
import { mb, median, quantile, round } from './stats.ts';
import { startStepwise } from './stepwise-server.ts';
import type { StoreSetup, Stores } from './stores.ts';
import { AGENT_RUN, type Client, openClient, warmUpChat } from './ws-client.ts';

const LATENCY_MS = 250;
const CALLS = 9;
export const BARE_SDK = 'bare openai SDK client';
/** The bare clients of this section, by how each reads a reply (see LockstepClient). */
export const BARE_CLIENTS: Record<LockstepClient, string> = {
  whole: BARE_SDK,
  streaming: 'bare openai SDK client, streaming',
  'streaming-journal': 'bare openai SDK client, streaming, + one SQLite commit per reply (the bound)',
};
/** Most sessions of the untimed lockstep each side runs first (CALLS model calls each). */
const WARM_UP_SESSIONS = 200;

/** One system at one N. */
interface ConcurrencyRow {
  system: string;
  sessions: number;
  totalMs: number;
  idealMs: number;
  lagP50Ms: number;
  lagP99Ms: number;
  /** Model calls (bare SDK) or runs (Stepwise) that failed; a row with failures sustained nothing. */
  failures: number;
  /** Stepwise only: the server's growth per connected, idle session. */
  idleRssPerSessionKb: number | undefined;
  peakRssMb: number;
  cpuPercent: number;
  cpuUsPerCall: number;
}

export async function concurrency(settings: Settings, stores: Stores) {
  log(`3. concurrency: ${settings.sessions.join(', ')} sessions in lockstep, three-step runs, ${LATENCY_MS} ms per model call`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '3', BENCH_LATENCY_MS: String(LATENCY_MS) });
  const stepwiseStores = [stores.embedded, ...(stores.postgres ? [stores.postgres] : [])];
  const rows: ConcurrencyRow[] = [];
  try {
    for (const sessions of settings.sessions) {
      for (const how of Object.keys(BARE_CLIENTS) as LockstepClient[]) {
        rows.push(await bare(model.url, sessions, how));
        log(`   ${JSON.stringify(rows.at(-1))}`);
      }
      for (const store of stepwiseStores) {
        rows.push(await stepwise(model.url, store, sessions));
        log(`   ${JSON.stringify(rows.at(-1))}`);
      }
    }
  } finally {
    await model.stop();
  }
  const systems = [...Object.values(BARE_CLIENTS), ...stepwiseStores.map((store) => `Stepwise, ${store.label}`)];
  const largest = (system: string) =>
    Math.max(0, ...rows.filter((row) => row.system === system && row.lagP99Ms < 100 && row.failures === 0).map((row) => row.sessions));
  return {
    latencyMs: LATENCY_MS,
    calls: CALLS,
    warmUpSessions: WARM_UP_SESSIONS,
    sessions: settings.sessions,
    rows,
    largestUnder100ms: Object.fromEntries(systems.map((system) => [system, largest(system)])),
  };
}

/** N lockstep sessions of bare SDK calls in a new worker process. */
async function bare(modelUrl: string, sessions: number, how: LockstepClient): Promise<ConcurrencyRow> {
  const worker = await startWorker('floor', modelUrl);
  try {
    // The warm-up each Stepwise server gets too: one chat, then a lockstep of the same shape.
    await worker.lockstep(1, CALLS, how);
    await worker.lockstep(Math.min(sessions, WARM_UP_SESSIONS), CALLS, how);
    return row(await worker.lockstep(sessions, CALLS, how));
  } finally {
    await worker.exit();
  }
  function row(result: LockstepResult): ConcurrencyRow {
    return {
      system: BARE_CLIENTS[how],
      sessions,
      totalMs: round(result.totalMs, 0),
      idealMs: CALLS * LATENCY_MS,
      lagP50Ms: round(median(result.lags), 1),
      lagP99Ms: round(quantile(result.lags, 0.99), 1),
      failures: result.failedCalls,
      idleRssPerSessionKb: undefined,
      peakRssMb: mb(result.rss),
      cpuPercent: round((result.cpuUs / 1000 / result.totalMs) * 100, 0),
      cpuUsPerCall: round(result.cpuUs / (sessions * CALLS), 0),
    };
  }
}

/** N lockstep sessions against a new Stepwise server, each from its own WebSocket in this process. */
async function stepwise(modelUrl: string, store: StoreSetup, sessions: number): Promise<ConcurrencyRow> {
  const server = await startStepwise(modelUrl, { env: await store.env() });
  const clients: Client[] = [];
  try {
    await warmUpChat(server.wsUrl);
    // Memory per idle session: the N sessions opened after one chat, as before the warm-up came.
    const before = currentRss(server.pid);
    clients.push(...(await openClients(server.wsUrl, sessions)));
    await sleep(500);
    const idleRssPerSessionKb = (currentRss(server.pid) - before) / sessions / 1024;
    // The warm-up, in sessions of its own, closed before the timed lockstep begins.
    const warmUp = await openClients(server.wsUrl, Math.min(sessions, WARM_UP_SESSIONS));
    try {
      await lockstep(warmUp);
    } finally {
      await closeAll(warmUp);
    }
    const cpuBefore = cpuMs(server.pid);
    const totalMs = await lockstep(clients);
    const serverCpuMs = cpuMs(server.pid) - cpuBefore;
    const lags = clients.flatMap((client) => client.lags);
    return {
      system: `Stepwise, ${store.label}`,
      sessions,
      totalMs: round(totalMs, 0),
      idealMs: CALLS * LATENCY_MS,
      lagP50Ms: round(median(lags), 1),
      lagP99Ms: round(quantile(lags, 0.99), 1),
      failures: clients.reduce((sum, client) => sum + client.failures, 0),
      idleRssPerSessionKb: round(idleRssPerSessionKb, 0),
      peakRssMb: mb(peakRss(server.pid)),
      cpuPercent: round((serverCpuMs / totalMs) * 100, 0),
      cpuUsPerCall: round((serverCpuMs * 1000) / (sessions * CALLS), 0),
    };
  } finally {
    await closeAll(clients);
    await server.stop();
  }
}

/** Closes every session's socket; resolves once each has closed. */
async function closeAll(clients: Client[]): Promise<void> {
  await Promise.all(
    clients.map(
      ({ socket }) =>
        new Promise<void>((resolve) => {
          if (socket.readyState === socket.CLOSED) return resolve();
          socket.once('close', () => resolve());
          socket.close();
        }),
    ),
  );
}

/** N new sessions of one server, opened 50 at a time. */
async function openClients(wsUrl: string, sessions: number): Promise<Client[]> {
  const clients: Client[] = [];
  for (let index = 0; index < sessions; index += 50) {
    clients.push(...(await Promise.all(Array.from({ length: Math.min(50, sessions - index) }, () => openClient(wsUrl)))));
  }
  return clients;
}

/** One three-step run in every session at once; resolves with the time until the last ended, ms. */
async function lockstep(clients: Client[]): Promise<number> {
  const started = now();
  for (const client of clients) client.socket.send(AGENT_RUN);
  await Promise.all(clients.map((client) => client.done));
  return now() - started;
}
