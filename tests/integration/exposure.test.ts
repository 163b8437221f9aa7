import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exposureProblem, loadConfig } from '@stepwise/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, stopAllProcesses } from '../helpers/process.ts';

let dataDir: string | undefined;

afterEach(async () => {
  await stopAllProcesses({ signal: 'SIGKILL' });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
}, 60_000);

const TOKEN = 'a-token-of-24-characters';
const problem = (env: Record<string, string>) => exposureProblem(loadConfig(env, { promptsDir: 'prompts' }));

describe('listening beyond this machine', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('needs AUTH_TOKEN or sign-in; loopback addresses need neither', () => {
    for (const host of ['127.0.0.1', 'localhost', '::1', '[::1]']) expect(problem({ HOST: host }), host).toBeUndefined();
    for (const host of ['0.0.0.0', '::', '192.0.2.7', 'chat.example.com']) expect(problem({ HOST: host }), host).toMatch(/AUTH_TOKEN/);
    expect(problem({ HOST: '0.0.0.0', AUTH_TOKEN: TOKEN })).toBeUndefined();
    expect(problem({ HOST: '0.0.0.0', AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '10.0.0.0/8' })).toBeUndefined();
  });

  it('refuses to start on HOST=0.0.0.0 without them, saying what to set, and starts with AUTH_TOKEN', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'stepwise-exposure-'));
    const refused = await startStepwiseProcess({ DATA_DIR: dataDir, HOST: '0.0.0.0' }).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/exited \(1\) before it was ready/);
    expect(refused).toMatch(/stepwise: HOST=0\.0\.0\.0 listens beyond this machine, but nobody signs in \(AUTH_MODE=none\)\. Set AUTH_TOKEN/);

    const running = await startStepwiseProcess({ DATA_DIR: dataDir, HOST: '0.0.0.0', AUTH_TOKEN: TOKEN });
    const port = new URL(running.url).port;
    expect((await fetch(`http://127.0.0.1:${port}/api/health/ready`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/api/sessions`)).status).toBe(401);
  });
});
