import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_READY_TIMEOUT_MS, PROCESS_TEST_TIMEOUT_MS, spawnTracked } from '../helpers/process.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const root = join(import.meta.dirname, '..', '..');
const processes = useServerProcesses();

/** Resolves with the first match of `pattern` in what the process has written so far or writes next. */
function waitForOutput(child: ReturnType<typeof spawnTracked>, pattern: RegExp, output: { text: string }) {
  return new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${pattern} after ${PROCESS_READY_TIMEOUT_MS / 1000} s:\n${output.text}`)), PROCESS_READY_TIMEOUT_MS);
    const check = () => {
      const match = pattern.exec(output.text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the start command exited (${code}) early:\n${output.text}`));
    });
    check();
  });
}

// `pnpm start` is `node scripts/start.mjs`: it compiles the server and runs the compiled file.
describe('the start command', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('compiles the server, serves the web app and a chat on the demo model, and stops cleanly on SIGTERM', async () => {
    const dataDir = processes.folder('stepwise-start-');
    const output = { text: '' };
    const child = spawnTracked(process.execPath, [join(root, 'scripts', 'start.mjs')], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, DEMO_DELAY_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      description: 'Stepwise (scripts/start.mjs)',
    });
    child.stdout!.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output.text += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    const [, url] = await waitForOutput(child, /Stepwise is ready at (http:\/\/[^\s"]+)/, output);
    expect(output.text).toContain('the offline demo model');
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="root">');

    const client = processes.socket(await TestClient.connect(`${url!.replace(/^http/, 'ws')}/ws`));
    client.chat('What is (17+25)*3?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events).at(-1)).toBe('response_complete');
    expect(summarize(events)).toContain('tool_start:calculator');
    expect(summarize(events).filter((kind) => kind.startsWith('agent_completion'))).toHaveLength(1);
    client.socket.terminate();

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
