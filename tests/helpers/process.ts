import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(createRequire(join(root, 'backend', 'package.json')).resolve('tsx')).href;

/** Stepwise as its own process (`main.ts`), for tests that kill and restart it. */
export interface StepwiseProcess {
  url: string;
  wsUrl: string;
  process: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
}

/** Starts the server process and waits until it says it is ready. */
export async function startStepwiseProcess(env: Record<string, string>): Promise<StepwiseProcess> {
  // The server runs in this one process (tsx as a loader), so a signal reaches the server itself.
  const child = spawn(process.execPath, ['--import', tsx, join(root, 'backend', 'src', 'main.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TSX_TSCONFIG_PATH: join(root, 'backend', 'tsconfig.json'), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DEMO_DELAY_MS: '0', LLM_RETRY_BASE_MS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Stepwise did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Stepwise is ready at (http:\/\/[^\s"]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`Stepwise exited (${code}) before it was ready:\n${output}`));
    });
  });
  return { url, wsUrl: `${url.replace(/^http/, 'ws')}/ws`, process: child, output: () => output, exited };
}
