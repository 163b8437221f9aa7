import { type ChildProcess, fork, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LockstepClient } from './frameworks.ts';
import type { WorkerCommand, WorkerReply } from './worker.ts';

export const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
export const tsxLoader = pathToFileURL(createRequire(join(root, 'bench', 'package.json')).resolve('tsx')).href;
export const tsconfig = join(root, 'backend', 'tsconfig.json');

/** Every process started here that is still running, and the folders to remove with them. */
const live = new Set<ChildProcess>();
export const folders = new Set<string>();
// However the runner ends (an error, Ctrl+C), nothing it started outlives it.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** Keeps a child on the list of processes to end if this one ends first. */
export function track<T extends ChildProcess>(child: T): T {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

function readLine(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match) {
        child.stdout?.off('data', onData);
        resolve(match);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`process exited (${code}) before it was ready:\n${output}`)));
  });
}

/** The scripted model server in its own process. */
export async function startModelServer(env: Record<string, string>) {
  const child = track(
    spawn(process.execPath, ['--import', tsxLoader, join(root, 'bench', 'src', 'model-server.ts')], {
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  const match = await readLine(child, /(\{"url".*\})\n/);
  const { url, stats } = JSON.parse(match[1]!) as { url: string; stats: string };
  return { url, stats, pid: child.pid!, stop: () => stopChild(child) };
}

/** A port free on 127.0.0.1 at the moment of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Peak resident memory of a process (VmHWM), in bytes. */
export function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** Current resident memory of a process (VmRSS), in bytes. */
export function currentRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/**
 * CPU time used by a process so far (user + system, all its threads), in ms, from /proc/PID/stat:
 * the kernel counts it in clock ticks (10 ms), so take it over phases of seconds, not single calls.
 */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks / 100) * 1000;
}

/** What one task of a worker reports: wall time, model calls, its own peak RSS and CPU time. */
export interface TaskResult {
  ms: number;
  calls: number;
  rss: number;
  /** The worker's own CPU time during the task (process.cpuUsage, user + system), µs. */
  cpuUs: number;
  /** Time to get ready for the task before it was timed (a new chat: socket open to `session`). */
  prepareMs: number;
}

/** What a worker's N lockstep sessions report. */
export interface LockstepResult {
  totalMs: number;
  lags: number[];
  /** Calls that failed (each ends its session). */
  failedCalls: number;
  rss: number;
  cpuUs: number;
}

/** A framework's warm worker process. */
export async function startWorker(name: string, target: string, ...extra: string[]) {
  const child = track(
    fork(join(root, 'bench', 'src', 'worker.ts'), [name, target, ...extra], {
      execArgv: ['--import', tsxLoader],
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, OPENAI_AGENTS_DISABLE_TRACING: '1' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const replies: ((reply: WorkerReply) => void)[] = [];
  child.on('message', (reply: WorkerReply) => replies.shift()?.(reply));
  child.once('exit', (code) => {
    for (const reply of replies.splice(0)) reply({ ok: false, error: `worker exited (${code})` });
  });
  const ask = (command: WorkerCommand) =>
    new Promise<WorkerReply>((resolve, reject) => {
      replies.push((reply) => (reply.ok ? resolve(reply) : reject(new Error(`${name}: ${reply.error}`))));
      if (command.cmd !== 'exit') child.send(command);
    });
  const ready = await new Promise<WorkerReply>((resolve) => replies.push(resolve));
  if (!ready.ok) throw new Error(`${name}: ${ready.error}`);
  return {
    pid: child.pid!,
    task: (steps: number) => ask({ cmd: 'task', steps }) as Promise<TaskResult>,
    stop: (marker: string, stats: string) => ask({ cmd: 'stop', marker, stats }) as Promise<{ stopAt: number; endedAt: number }>,
    lockstep: (sessions: number, calls: number, how: LockstepClient = 'whole') => ask({ cmd: 'lockstep', sessions, calls, how }) as Promise<LockstepResult>,
    async exit() {
      // A worker that died has no channel left: sending to it would throw outside any caller.
      if (child.connected) child.send({ cmd: 'exit' });
      await stopChild(child);
    },
  };
}

export type Worker = Awaited<ReturnType<typeof startWorker>>;

/** SIGTERM, then SIGKILL after 5 s; resolves once the child has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
