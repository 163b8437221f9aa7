// A real Stepwise server for the benchmarks, and what it says about its store.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { folders, freePort, root, stopChild, track } from './processes.ts';

/** The compiled server, as scripts/build-server.mjs writes it. */
const serverBundle = join(root, 'backend', 'dist', 'main.js');

export interface StepwiseOptions {
  /** Extra environment (a store's settings, LLM_STREAMING, REDIS_URL and INSTANCE_ID, RUN_ENGINE and RESTATE_*, …). */
  env?: Record<string, string>;
  /** Node flags before the entry point (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** How often to ask /api/health while it starts; a cold-start measure asks often. */
  pollMs?: number;
}

/** What a started server says about its store, from its "database ready" log line. */
export interface ReportedStore {
  /** The server's own description of its database, when it logged one. */
  description: string | undefined;
  /** A short name for tables: "embedded SQLite", "embedded PGlite", "PostgreSQL", … */
  label: string;
}

/**
 * A real Stepwise server process pointed at the model server, started as `pnpm start` starts it
 * (Node running the compiled server, backend/dist/main.js, which `pnpm bench` builds first), on a
 * new, empty DATA_DIR. Its log (default level) goes to a file
 * beside DATA_DIR, not to a pipe this process would have to drain: the cost of writing it stays
 * the product's, and the "database ready" line tells which store it opened.
 */
export async function startStepwise(modelUrl: string, options: StepwiseOptions = {}) {
  const base = mkdtempSync(join(tmpdir(), 'stepwise-bench-'));
  folders.add(base);
  const dataDir = join(base, 'data');
  mkdirSync(dataDir);
  const logFile = join(base, 'server.log');
  const logFd = openSync(logFile, 'w');
  const port = await freePort();
  // Settings of the caller's shell that choose what is measured do not leak in: the options say.
  // (REDIS_URL from the shell would make every server here one of several instances, RUN_ENGINE a Restate one.)
  const {
    DATABASE_URL: _database,
    REDIS_URL: _redis,
    INSTANCE_ID: _instance,
    DB_SYNC: _sync,
    LLM_STREAMING: _streaming,
    STEPWISE_CONFIG: _config,
    RUN_ENGINE: _engine,
    RESTATE_INGRESS_URL: _ingress,
    RESTATE_ADMIN_URL: _admin,
    RESTATE_SERVICE_PORT: _servicePort,
    RESTATE_SERVICE_URL: _serviceUrl,
    ...inherited
  } = process.env;
  if (!existsSync(serverBundle)) throw new Error(`${serverBundle} is missing: run \`node scripts/build-server.mjs\` (pnpm bench does)`);
  const spawnedAt = performance.now();
  const child = track(
    spawn(process.execPath, [...(options.nodeArgs ?? []), serverBundle], {
      cwd: base,
      env: {
        ...inherited,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LLM_PROVIDER: 'openai',
        OPENAI_BASE_URL: modelUrl,
        OPENAI_API_KEY: 'bench',
        MAX_CONCURRENT_RUNS: '100000',
        MAX_SOCKETS_PER_ADDRESS: '100000',
        MAX_CONNECTIONS_PER_ADDRESS: '1000000',
        MAX_MESSAGES_PER_SECOND: '100000',
        // Every socket's upgrade is a REST request of the one address the harness connects from.
        REST_MAX_REQUESTS_PER_MINUTE: '1000000',
        ...options.env,
      },
      stdio: ['ignore', logFd, 'inherit'],
    }),
  );
  closeSync(logFd);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child);
    rmSync(base, { recursive: true, force: true });
    folders.delete(base);
  };
  try {
    await waitForHealth(child, url, options.pollMs ?? 100);
  } catch (error) {
    await stop();
    throw error;
  }
  const startMs = performance.now() - spawnedAt;
  const store = await reportedStore(logFile, dataDir);
  return { url, wsUrl: `${url.replace(/^http/, 'ws')}/ws`, pid: child.pid!, startMs, store, dataDir, stop };
}

export type StepwiseServer = Awaited<ReturnType<typeof startStepwise>>;

/** Overrides the name the embedded store is shown under (`--store-label=…`). */
let embeddedLabelOverride: string | undefined;
export function setEmbeddedStoreLabel(label: string | undefined): void {
  embeddedLabelOverride = label;
}

async function reportedStore(logFile: string, dataDir: string): Promise<ReportedStore> {
  let description: string | undefined;
  // The line is written before the server listens; a moment's grace in case the logger buffers.
  for (let attempt = 0; attempt < 20 && description === undefined; attempt++) {
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (!line.includes('database ready')) continue;
      try {
        description = String((JSON.parse(line) as { database?: unknown }).database ?? '') || undefined;
      } catch {
        // Not a JSON line: leave it to the files in DATA_DIR.
      }
    }
    if (description === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { description, label: storeLabel(description, dataDir) };
}

/** The store's short name, from the server's description or, failing that, from what it created in DATA_DIR. */
export function storeLabel(description: string | undefined, dataDir: string): string {
  const text = description ?? '';
  if (/^PostgreSQL at /.test(text)) return 'PostgreSQL';
  if (embeddedLabelOverride) return embeddedLabelOverride;
  if (/sqlite|libsql/i.test(text) || existsSync(join(dataDir, 'stepwise.db'))) return 'embedded SQLite';
  if (/embedded PostgreSQL|pglite/i.test(text) || existsSync(join(dataDir, 'db'))) return 'embedded PGlite';
  return text ? `embedded (${text.replace(/ (in|at) \/\S+/g, '')})` : 'embedded (unreported)';
}

async function waitForHealth(child: ChildProcess, url: string, pollMs: number): Promise<void> {
  // Generous: on a machine loaded by other work a start has taken over a minute.
  const deadline = performance.now() + 180_000;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('Stepwise exited before it was ready');
    if (
      await fetch(`${url}/api/health`).then(
        (response) => response.ok,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  throw new Error('Stepwise did not start in time');
}
