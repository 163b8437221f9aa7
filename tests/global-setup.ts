import { buildServer } from '../scripts/build-server.mjs';
import { createRegistry, REGISTRY_ENV, sweepAndReport } from './helpers/process-registry.mjs';

/**
 * Compiles the server as `pnpm start` does (the tests that start it as a process of its own run
 * that file), gives the run a process registry (unless the test command already made one) and,
 * at the end, kills whatever the tests left running: processes of a worker that crashed or was
 * killed.
 */
export default async function setup(): Promise<() => void> {
  await buildServer();
  const own = !process.env[REGISTRY_ENV];
  const dir = process.env[REGISTRY_ENV] || createRegistry();
  process.env[REGISTRY_ENV] = dir;
  let done = false;
  const teardown = () => {
    if (done) return;
    done = true;
    process.off('exit', teardown);
    // A registry the test command made is removed by it, after its own sweep once vitest has exited.
    sweepAndReport(dir, 'test teardown', { remove: own });
  };
  // Also when vitest exits without tearing down (interrupted with Ctrl+C, for one).
  process.once('exit', teardown);
  return teardown;
}
