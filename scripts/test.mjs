// The whole test suite: type checks, the web app build, a throwaway PostgreSQL server, then unit,
// contract, integration and end-to-end tests (vitest). Extra arguments go to vitest, e.g. `pnpm test unit/calculator`.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startTestPostgres } from './postgres.mjs';
import { root, run, runNodeBin } from './run.mjs';

const args = process.argv.slice(2);
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The browser tests drive Debian's Chromium; install it when it is missing. */
async function ensureChromium() {
  if (existsSync(chromium)) return;
  console.log('Installing Chromium for the browser tests (Debian package "chromium")…');
  const isRoot = process.getuid?.() === 0;
  const sudo = isRoot ? [] : ['sudo', '-n'];
  const apt = (...aptArgs) => run(sudo[0] ?? 'apt-get', [...sudo.slice(1), ...(isRoot ? [] : ['apt-get']), ...aptArgs], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if ((await apt('update', '-qq')) !== 0 || (await apt('install', '-y', '-qq', 'chromium')) !== 0 || !existsSync(chromium)) {
    console.error(`Could not install Chromium at ${chromium}; install Debian's "chromium" package or set CHROMIUM_PATH.`);
    process.exit(1);
  }
  console.log(execFileSync(chromium, ['--version']).toString().trim());
}

if (args.length === 0) {
  console.log('Type-checking…');
  for (const project of ['shared-types', 'backend', 'tests', 'frontend']) {
    const code = await runNodeBin('.', 'typescript', 'bin/tsc', ['-p', join(root, project)]);
    if (code !== 0) process.exit(code);
  }
}

if (args.length === 0 || args.some((arg) => arg.includes('e2e'))) {
  await ensureChromium();
  console.log('Building the web app…');
  const code = await run(process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (code !== 0) process.exit(code);
}

// The store's contract tests and the PostgreSQL integration tests run against a real server.
const postgres = process.env.TEST_DATABASE_URL ? undefined : await startTestPostgres();
const env = { ...process.env, REQUIRE_POSTGRES: '1', TEST_DATABASE_URL: process.env.TEST_DATABASE_URL || postgres.url };
let code;
try {
  code = await runNodeBin('tests', 'vitest', 'vitest.mjs', ['run', ...args], { cwd: join(root, 'tests'), env });
} finally {
  await postgres?.stop();
}
process.exit(code);
