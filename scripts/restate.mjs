// Restate for the test suite and the bench: the restate-server binary from the npm package
// @restatedev/restate-server (installed with the workspace), a throwaway server with its data in a
// temporary base dir, every listener on 127.0.0.1, in a process group of its own; stop() ends it.
// Invocations are retried quickly (at most a second apart), so a run whose process was killed goes
// on as soon as that process is back.
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, groupStopper, root } from './run.mjs';

/** The restate-server binary the npm package ships for this platform. */
export function restateServerPath() {
  const fromTests = createRequire(join(root, 'tests', 'package.json'));
  // The binary is an optional dependency of the launcher package: resolve it from there.
  const launcher = realpathSync(fromTests.resolve('@restatedev/restate-server/package.json'));
  return createRequire(launcher).resolve(`@restatedev/restate-server-${platform()}-${arch()}/bin/restate-server`);
}

/** Resolves once the admin API answers /health (polling, up to `timeoutMs`). */
export async function waitForRestate(adminUrl, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${adminUrl}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Restate did not answer at ${adminUrl}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts a throwaway server; resolves with its ingress and admin URLs and how to stop it. */
export async function startTestRestate() {
  const binary = restateServerPath();
  const [ingress, admin, fabric] = [await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-restate-'));
  const config = join(dir, 'restate.toml');
  writeFileSync(
    config,
    [
      'cluster-name = "stepwise-test"',
      'default-num-partitions = 2',
      'rocksdb-total-memory-size = "256 MiB"',
      'disable-telemetry = true',
      'log-filter = "warn"',
      'listen-mode = "tcp"',
      `bind-address = "127.0.0.1:${fabric}"`,
      `advertised-address = "http://127.0.0.1:${fabric}/"`,
      '[default-retry-policy]',
      'initial-interval = "100ms"',
      'exponentiation-factor = 2.0',
      'max-interval = "1s"',
      'max-attempts = "unlimited"',
      '[admin]',
      `bind-address = "127.0.0.1:${admin}"`,
      'disable-web-ui = true',
      '[admin.query-engine]',
      'memory-size = "64 MiB"',
      '[ingress]',
      `bind-address = "127.0.0.1:${ingress}"`,
      '',
    ].join('\n'),
  );
  const child = spawn(binary, ['--config-file', config, '--base-dir', join(dir, 'data'), '--no-logo'], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  const { exited, stopNow, stop } = groupStopper(child, dir, 10_000);
  const adminUrl = `http://127.0.0.1:${admin}`;
  try {
    await Promise.race([
      waitForRestate(adminUrl),
      exited.then((code) => {
        throw new Error(`restate-server exited (${code}): ${stderr}`);
      }),
    ]);
  } catch (error) {
    stopNow();
    throw error;
  }
  return {
    ingressUrl: `http://127.0.0.1:${ingress}`,
    adminUrl,
    stopNow,
    stop,
  };
}

if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(new URL(import.meta.url).pathname)) {
  // node scripts/restate.mjs: a server for trying RUN_ENGINE=restate by hand, until Ctrl-C.
  const restate = await startTestRestate();
  console.log(`RESTATE_INGRESS_URL=${restate.ingressUrl} RESTATE_ADMIN_URL=${restate.adminUrl}`);
  const end = () => restate.stop().then(() => process.exit(0));
  process.on('SIGINT', end);
  process.on('SIGTERM', end);
}
