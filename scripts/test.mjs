// The whole test suite: the web app build, a throwaway PostgreSQL server, then unit, contract,
// integration and end-to-end tests (vitest), with the type checks running beside them. Extra arguments go to vitest, e.g. `pnpm test unit/calculator`.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { dirname, join } from 'node:path';
import { createRegistry, REGISTRY_ENV, sweepAndReport } from '../tests/helpers/process-registry.mjs';
import { startTestPostgres } from './postgres.mjs';
import { startTestRedis } from './redis.mjs';
import { aptInstall, resolveFrom, root, run } from './run.mjs';

const args = process.argv.slice(2);
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The browser tests drive Debian's Chromium; install it when it is missing. */
async function ensureChromium() {
  if (existsSync(chromium)) return;
  console.log('Installing Chromium for the browser tests (Debian package "chromium")…');
  if (!(await aptInstall('chromium')) || !existsSync(chromium)) {
    console.error(`Could not install Chromium at ${chromium}; install Debian's "chromium" package or set CHROMIUM_PATH.`);
    process.exit(1);
  }
  console.log(execFileSync(chromium, ['--version']).toString().trim());
}

// From here on nothing may outlive the run: vitest runs in a process group of its own (with its
// workers and what they start), the processes the tests start are written down in a registry, and
// PostgreSQL is stopped last, also when vitest crashes or the run is interrupted.
const registry = createRegistry();
let postgres;
let redis;
let vitest;
let interrupted;
let finished = false;
/** The type checker now running, and the report of a failed check. */
let checker;
let typeErrors;

/** Kills whatever is left, at once; for the exit hook and a second Ctrl+C. */
function cleanUpNow() {
  if (finished) return;
  finished = true;
  if (vitest?.pid && vitest.exitCode === null && vitest.signalCode === null) signalGroup(vitest.pid, 'SIGKILL');
  if (checker && checker.exitCode === null) checker.kill('SIGKILL');
  sweepAndReport(registry, 'test command', { remove: true });
  postgres?.stopNow();
  redis?.stopNow();
}
process.once('exit', cleanUpNow);

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (interrupted || !vitest) {
      // A second interruption, or one before the tests started: stop everything now.
      cleanUpNow();
      process.exit(128 + osConstants.signals[signal]);
    }
    interrupted = signal;
    console.error(`\n${signal}: stopping the tests…`);
    // Vitest is in its own process group, so Ctrl+C in the terminal reaches only this process.
    signalGroup(vitest.pid, signal);
    setTimeout(() => signalGroup(vitest.pid, 'SIGKILL'), 15_000).unref();
  });
}

/**
 * Type-checks the four projects one after another beside the build and the tests (the checker
 * computes while most tests wait on servers and a browser); resolves with the first failing
 * project's report, or undefined when all pass.
 */
async function typeCheck() {
  const tsc = join(dirname(resolveFrom('.', 'typescript/package.json')), 'bin', 'tsc');
  for (const project of ['shared-types', 'backend', 'tests', 'frontend']) {
    const report = await new Promise((resolve) => {
      checker = spawn(process.execPath, [tsc, '-p', join(root, project)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      checker.stdout.on('data', (chunk) => (output += chunk));
      checker.stderr.on('data', (chunk) => (output += chunk));
      checker.once('error', (error) => resolve(`${project}: could not run the type checker: ${error.message}`));
      checker.once('exit', (code) => resolve(code === 0 ? undefined : `${project}:\n${output}`));
    });
    if (report) return report;
  }
  return undefined;
}

/** Starts the type check; a failure is reported at once and stops the tests. */
function startTypeCheck() {
  console.log('Type-checking (beside the tests)…');
  return typeCheck().then((report) => {
    if (!report) return console.log('Type check passed.');
    typeErrors = report;
    console.error(`\nThe type check failed in ${report}`);
    // No reason to wait for the tests: stop them.
    if (vitest?.pid) signalGroup(vitest.pid, 'SIGTERM');
  });
}

const typeChecked = args.length === 0 ? startTypeCheck() : Promise.resolve();

if (args.length === 0 || args.some((arg) => arg.includes('e2e'))) {
  await ensureChromium();
  console.log('Building the web app…');
  const code = await run(process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (code !== 0) process.exit(code);
}

// The store's contract tests and the PostgreSQL integration tests run against a real server.
postgres = process.env.TEST_DATABASE_URL ? undefined : await startTestPostgres();
// The tests of several instances meet on Redis (and start their own when they restart it).
redis = process.env.TEST_REDIS_URL ? undefined : await startTestRedis();
const env = {
  ...process.env,
  REQUIRE_POSTGRES: '1',
  TEST_DATABASE_URL: process.env.TEST_DATABASE_URL || postgres.url,
  TEST_REDIS_URL: process.env.TEST_REDIS_URL || redis.url,
  [REGISTRY_ENV]: registry,
};
let code;
try {
  if (typeErrors) throw new Error('type check failed');
  const vitestBin = join(dirname(resolveFrom('tests', 'vitest/package.json')), 'vitest.mjs');
  vitest = spawn(process.execPath, [vitestBin, 'run', ...args], {
    cwd: join(root, 'tests'),
    env,
    detached: true,
    // No terminal input: a process outside the foreground group must not touch it.
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  code = await new Promise((resolve) => {
    vitest.once('error', (error) => {
      console.error(`Could not run vitest: ${error.message}`);
      resolve(1);
    });
    vitest.once('exit', (exitCode, signal) => resolve(exitCode ?? 128 + (osConstants.signals[signal] ?? 0)));
  });
  // The workers and what they started go with vitest, even when it crashed.
  signalGroup(vitest.pid, 'SIGKILL');
  sweepAndReport(registry, 'test command', { remove: true });
  await typeChecked;
} catch (error) {
  if (!typeErrors) throw error;
} finally {
  await redis?.stop();
  await postgres?.stop();
  cleanUpNow();
}
if (typeErrors) console.error('\nThe test command failed: the type check did not pass (above).');
process.exit(interrupted ? 128 + osConstants.signals[interrupted] : typeErrors ? 2 : code);
