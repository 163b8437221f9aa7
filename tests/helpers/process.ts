import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFailed } from 'vitest';
import { serverBundle } from '../../scripts/build-server.mjs';
import { forgetProcess, killRecorded, recordProcess, REGISTRY_ENV, type RecordedProcess, startTime } from './process-registry.mjs';

const root = join(import.meta.dirname, '..', '..');

/**
 * The overall limit for a test that starts Stepwise as its own process (one may start two): about
 * a second each when idle, many times that on a loaded machine; only a failing test waits this long.
 */
export const PROCESS_TEST_TIMEOUT_MS = 120_000;
/** How long a server process may take to say it is ready. */
export const PROCESS_READY_TIMEOUT_MS = 90_000;

// ---------------------------------------------------------------------------------------------
// The registry: every process a test starts, so that each is stopped (with its process group)
// even when the test fails, times out or the worker is told to stop.
// ---------------------------------------------------------------------------------------------

interface Entry extends RecordedProcess {
  /** Resolves once the process has exited (its group may still have members). */
  exited: Promise<void>;
}

const live = new Map<number, Entry>();
let hooksInstalled = false;

const registryDir = () => process.env[REGISTRY_ENV];

/** SIGKILLs everything still registered, at once (for exit and signal hooks: nothing async runs there). */
export function killAllProcessesNow(): void {
  for (const entry of live.values()) killRecorded(entry);
}

/**
 * When the worker goes (vitest stops its workers with SIGTERM, Ctrl+C sends SIGINT), the
 * processes go with it. The signal is raised again afterwards when nobody else handles it, so the
 * worker ends as it would have.
 */
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', killAllProcessesNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllProcessesNow();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

function register(entry: Entry): void {
  installHooks();
  live.set(entry.pid, entry);
  const dir = registryDir();
  if (dir) recordProcess(dir, { pid: entry.pid, group: entry.group, start: entry.start, description: entry.description ?? '' });
}

/** The process has exited: whatever is left of its group goes too, and it leaves the registry. */
function finish(entry: Entry): void {
  if (live.get(entry.pid) !== entry) return;
  if (entry.group) {
    try {
      process.kill(-entry.pid, 'SIGKILL');
    } catch {
      // Nothing left in the group.
    }
  }
  live.delete(entry.pid);
  const dir = registryDir();
  if (dir) forgetProcess(dir, entry.pid);
}

/**
 * Spawns a process in its own process group (detached), registered until it has exited, so that
 * stopProcess/stopAllProcesses (and, failing those, the worker's hooks and the global teardown)
 * take it down with everything it started.
 */
export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions & { description?: string } = {}): ChildProcess {
  const { description, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, detached: true });
  if (child.pid === undefined) return child; // it failed to start; the 'error' event says why
  const pid = child.pid;
  const entry: Entry = {
    pid,
    group: true,
    start: startTime(pid),
    description: description ?? [command, ...args].join(' ').slice(0, 200),
    exited: Promise.resolve(),
  };
  entry.exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      finish(entry);
      resolve();
    }),
  );
  register(entry);
  return child;
}

/**
 * Registers a process that something else started (the browser Playwright launches, detached),
 * so that it is stopped like our own. Its exit is noticed by polling /proc.
 */
export function adoptProcess(pid: number, options: { group: boolean; description: string }): void {
  const start = startTime(pid);
  if (start === undefined || live.has(pid)) return;
  const entry: Entry = { pid, group: options.group, start, description: options.description, exited: Promise.resolve() };
  entry.exited = (async () => {
    // The timer does not keep the worker alive by itself.
    while (startTime(pid) === start) await new Promise((resolve) => setTimeout(resolve, 50).unref());
    finish(entry);
  })();
  register(entry);
}

/** The processes whose parent is this one: pid, process group and command line (Linux). */
export function childProcesses(): { pid: number; pgid: number; command: string }[] {
  const children: { pid: number; pgid: number; command: string }[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return children;
  }
  for (const name of names) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid || fields[0] === 'Z') continue;
      const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      children.push({ pid: Number(name), pgid: Number(fields[2]), command });
    } catch {
      // It exited while we looked.
    }
  }
  return children;
}

function signalEntry(entry: Entry, signal: NodeJS.Signals): void {
  try {
    process.kill(entry.group ? -entry.pid : entry.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Whether the promise settled within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  clearTimeout(timer);
  return settled;
}

/**
 * Stops a registered process and its group: `signal` first, SIGKILL when it is still there after
 * `graceMs`. Resolves once it has exited. Unknown (or already finished) pids resolve at once.
 */
export async function stopProcess(pid: number | undefined, options: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<void> {
  const entry = pid === undefined ? undefined : live.get(pid);
  if (!entry) return;
  const signal = options.signal ?? 'SIGTERM';
  signalEntry(entry, signal);
  if (signal !== 'SIGKILL' && (await within(entry.exited, options.graceMs ?? 5_000))) return;
  signalEntry(entry, 'SIGKILL');
  if (!(await within(entry.exited, 30_000))) throw new Error(`process ${pid} (${entry.description}) did not exit after SIGKILL`);
}

/** Stops every process the tests of this worker started and are still running (for afterEach/afterAll). */
export async function stopAllProcesses(options: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<void> {
  await Promise.all([...live.keys()].map((pid) => stopProcess(pid, options)));
}

// ---------------------------------------------------------------------------------------------
// Stepwise as its own process.
// ---------------------------------------------------------------------------------------------

/** Stepwise as its own process (`main.ts`), for tests that kill and restart it. */
export interface StepwiseProcess {
  url: string;
  wsUrl: string;
  process: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** Kills it (with its process group) with SIGKILL and waits until it has gone. */
  kill: () => Promise<void>;
}

/**
 * Starts the server process and waits until it logs that it is ready. It is registered from the
 * moment it is spawned, so stopAllProcesses() ends it even while this is still waiting.
 */
export async function startStepwiseProcess(
  env: Record<string, string>,
  options: { readyTimeoutMs?: number /** Another Node.js binary to run it with. */; node?: string } = {},
): Promise<StepwiseProcess> {
  // The server as `pnpm start` runs it: compiled by the tests' global setup (backend/dist/main.js,
  // which loads server.js), in this one process, so a signal reaches the server itself.
  const child = spawnTracked(options.node ?? process.execPath, [serverBundle], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DEMO_DELAY_MS: '0',
      LLM_RETRY_BASE_MS: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    description: 'Stepwise (backend/dist/main.js)',
  });
  let output = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const limit = options.readyTimeoutMs ?? PROCESS_READY_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  try {
    const url = await new Promise<string>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`Stepwise was not ready after ${limit / 1000} s:\n${output}`)), limit);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /Stepwise is ready at (http:\/\/[^\s"]+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('error', reject);
      void exited.then((code) => reject(new Error(`Stepwise exited (${code}) before it was ready:\n${output}`)));
    });
    // A test that fails shows what the server logged last: a rare failure carries its own evidence.
    try {
      onTestFailed(() => void process.stderr.write(`\n--- the log of Stepwise at ${url}, its end ---\n${output.slice(-6000)}\n`));
    } catch {
      // Started outside a test (a file's beforeAll): its tests' own failures say enough.
    }
    return {
      url,
      wsUrl: `${url.replace(/^http/, 'ws')}/ws`,
      process: child,
      output: () => output,
      exited,
      kill: () => stopProcess(child.pid, { signal: 'SIGKILL' }),
    };
  } catch (error) {
    await stopProcess(child.pid, { signal: 'SIGKILL' });
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
