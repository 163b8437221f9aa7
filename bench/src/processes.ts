import { type ChildProcess, fork, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WorkerCommand, WorkerReply } from './worker.ts';

export const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
const tsxLoader = pathToFileURL(createRequire(join(root, 'bench', 'package.json')).resolve('tsx')).href;
const tsconfig = join(root, 'backend', 'tsconfig.json');

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
  const child = spawn(process.execPath, ['--import', tsxLoader, join(root, 'bench', 'src', 'model-server.ts')], {
    env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const match = await readLine(child, /(\{"url".*\})\n/);
  const { url, stats } = JSON.parse(match[1]!) as { url: string; stats: string };
  return { url, stats, pid: child.pid!, stop: () => stopChild(child) };
}

/** A real Stepwise server process pointed at the model server. */
export async function startStepwise(modelUrl: string, env: Record<string, string> = {}, nodeArgs: string[] = []) {
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-bench-'));
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, '--import', tsxLoader, join(root, 'backend', 'src', 'main.ts')], {
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: tsconfig,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LLM_PROVIDER: 'openai',
      OPENAI_BASE_URL: modelUrl,
      OPENAI_API_KEY: 'bench',
      MAX_CONCURRENT_RUNS: '100000',
      MAX_SOCKETS_PER_ADDRESS: '100000',
      MAX_MESSAGES_PER_SECOND: '100000',
      ...env,
    },
    // Default logging (info, one line per phase) goes to /dev/null: its cost is part of the product's.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(child, url);
  return {
    url,
    wsUrl: `${url.replace(/^http/, 'ws')}/ws`,
    pid: child.pid!,
    async stop() {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function waitForHealth(child: ChildProcess, url: string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (child.exitCode !== null) throw new Error('Stepwise exited before it was ready');
    if (await fetch(`${url}/api/health`).then((response) => response.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('Stepwise did not start in time');
}

function freePort(): Promise<number> {
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

/** CPU time used by a process so far (user + system), in ms. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks / 100) * 1000;
}

/** A framework's warm worker process. */
export async function startWorker(name: string, target: string) {
  const child = fork(join(root, 'bench', 'src', 'worker.ts'), [name, target], {
    execArgv: ['--import', tsxLoader],
    env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, OPENAI_AGENTS_DISABLE_TRACING: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const replies: ((reply: WorkerReply) => void)[] = [];
  child.on('message', (reply: WorkerReply) => replies.shift()?.(reply));
  const ask = (command: WorkerCommand) =>
    new Promise<WorkerReply>((resolve, reject) => {
      replies.push((reply) => (reply.ok ? resolve(reply) : reject(new Error(`${name}: ${reply.error}`))));
      if (command.cmd !== 'exit') child.send(command);
    });
  await new Promise<WorkerReply>((resolve) => replies.push(resolve)); // ready
  return {
    pid: child.pid!,
    task: (steps: number) => ask({ cmd: 'task', steps }) as Promise<{ ms: number; calls: number; rss: number }>,
    stop: (marker: string, stats: string) => ask({ cmd: 'stop', marker, stats }) as Promise<{ stopAt: number; endedAt: number }>,
    async exit() {
      child.send({ cmd: 'exit' });
      await stopChild(child);
    },
  };
}

function stopChild(child: ChildProcess): Promise<void> {
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
