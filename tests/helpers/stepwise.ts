import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, openSqliteStore, type RunningServer, type Store, startServer } from '@stepwise/backend';
import type { DependencyContainer } from 'tsyringe';

/** A real Stepwise server on an ephemeral port of 127.0.0.1. */
export interface TestServer extends RunningServer {
  wsUrl: string;
}

let shared: Promise<Store> | undefined;

/** One in-memory embedded database per test file, shared by its servers: sessions keep the tests apart. */
export function sharedTestStore(): Promise<Store> {
  shared ??= Promise.resolve(openSqliteStore(':memory:'));
  return shared;
}

/**
 * Closes the shared database after a file's tests (per-file-setup.ts): files run one after another
 * in a worker that keeps its modules, and each file starts with an empty database of its own.
 */
export async function closeSharedTestStore(): Promise<void> {
  const store = shared;
  shared = undefined;
  await (await store)?.close();
}

/** Starts the real server with these environment variables on top of quiet test defaults. */
export async function startStepwise(
  env: Record<string, string> = {},
  configure?: (container: DependencyContainer) => void,
  store?: Store,
): Promise<TestServer> {
  const config = configFromEnv({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DEMO_DELAY_MS: '0',
    LLM_RETRY_BASE_MS: '1',
    // Session files go to a fresh folder; the database is still the shared one unless DATA_DIR is given.
    DATA_DIR: env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'stepwise-files-')),
    ...env,
  });
  const restore = processEnv(Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('OTEL_'))));
  const server = await startServer({
    config,
    store: store ?? (env.DATA_DIR || env.DATABASE_URL ? undefined : await sharedTestStore()),
    ...(configure ? { configure } : {}),
  } as Parameters<typeof startServer>[0]).finally(restore);
  return { ...server, wsUrl: `${server.url.replace(/^http/, 'ws')}/ws` };
}

/**
 * Sets these process environment variables, and returns how to put back what was there: the
 * OpenTelemetry SDK reads its OTEL_* variables from the process environment itself, as it starts.
 */
function processEnv(values: Record<string, string>): () => void {
  const before = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  Object.assign(process.env, values);
  return () => {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** Starts Stepwise against an OpenAI-compatible endpoint. */
export function startStepwiseWithModel(baseUrl: string, env: Record<string, string> = {}): Promise<TestServer> {
  return startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'test-key', ...env });
}
