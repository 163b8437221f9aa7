// Redis for the test suite: Debian's package (installed when missing), a throwaway server on
// 127.0.0.1 with no persistence, in a process group of its own; stop() ends it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aptInstall, freePort, groupStopper } from './run.mjs';

export const REDIS_SERVER = process.env.REDIS_SERVER_PATH ?? '/usr/bin/redis-server';

/** Installs Debian's redis-server when it is missing. */
export async function ensureRedis() {
  if (existsSync(REDIS_SERVER)) return;
  console.log('Installing Redis for the tests of several instances (Debian package "redis-server")…');
  if (!(await aptInstall('redis-server')) || !existsSync(REDIS_SERVER)) {
    throw new Error('Could not install Redis; install Debian\'s "redis-server" package or set TEST_REDIS_URL.');
  }
  // The package starts a system service; the tests run their own servers.
  try {
    execFileSync('service', ['redis-server', 'stop'], { stdio: 'ignore' });
  } catch {
    // No service manager here: nothing was started.
  }
}

/** Resolves once something answers PING on the port (polling, up to `timeoutMs`). */
export async function waitForRedis(port, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Redis did not answer on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts a throwaway server; resolves with its URL and how to stop it. */
export async function startTestRedis() {
  await ensureRedis();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-redis-'));
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', join(dir, 'redis.log')],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  const { stopNow, stop } = groupStopper(child, dir, 5_000);
  try {
    await waitForRedis(port);
  } catch (error) {
    stopNow();
    throw error;
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    stopNow,
    stop,
  };
}
