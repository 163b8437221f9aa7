// A throwaway PostgreSQL server for the test suite: Debian's package (installed when missing),
// a fresh cluster in a temporary folder, listening on 127.0.0.1 only, removed afterwards.
// It runs in a process group of its own, so Ctrl+C reaches only the test command, which stops it
// last; stopNow() ends it at once (for exit hooks), stop() cleanly.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { aptInstall, freePort } from './run.mjs';

const isRoot = process.getuid?.() === 0;

function findBinDir() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((version) => existsSync(join(base, version, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] && join(base, versions[0], 'bin');
}

async function install() {
  console.log('Installing PostgreSQL for the store tests (Debian package "postgresql")…');
  if (!(await aptInstall('postgresql'))) {
    throw new Error('Could not install PostgreSQL; install Debian\'s "postgresql" package or set TEST_DATABASE_URL.');
  }
}

/** Runs a PostgreSQL program as the postgres user when we are root (the server refuses to run as root). */
function asPostgres(binary, args) {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
}

/** Starts the server; resolves with its URL and a stop function. */
export async function startTestPostgres() {
  let bin = findBinDir();
  if (!bin) {
    await install();
    bin = findBinDir();
    if (!bin) throw new Error('PostgreSQL was installed but its programs were not found under /usr/lib/postgresql');
  }
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-pg-'));
  if (isRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const [initdb, initdbArgs] = asPostgres(join(bin, 'initdb'), ['-D', dir, '-A', 'trust', '-U', 'stepwise', '-E', 'UTF8', '--no-sync']);
  execFileSync(initdb, initdbArgs, { stdio: 'ignore' });

  const port = await freePort();
  const [postgres, postgresArgs] = asPostgres(join(bin, 'postgres'), [
    '-D',
    dir,
    '-h',
    '127.0.0.1',
    '-p',
    String(port),
    '-k',
    dir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=200',
  ]);
  const server = spawn(postgres, postgresArgs, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  server.stderr.on('data', (chunk) => (log += chunk));
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const running = () => server.exitCode === null && server.signalCode === null;

  /** The postmaster's pid: runuser, its parent when we are root, does not pass signals on. */
  const postmaster = () => {
    try {
      const pid = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const signal = (pid, name) => {
    try {
      if (pid) process.kill(pid, name);
    } catch {
      // Already gone.
    }
  };
  let stopped = false;
  /** At once and synchronously: immediate shutdown, then the whole process group. */
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    signal(postmaster(), 'SIGQUIT');
    signal(-server.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // Whatever ends this process (an error, process.exit), the server does not outlive it.
  process.once('exit', stopNow);

  const ready = join(bin, 'pg_isready');
  const deadline = Date.now() + 60_000; // a busy machine
  for (;;) {
    try {
      await promisify(execFile)(ready, ['-h', '127.0.0.1', '-p', String(port), '-U', 'stepwise', '-q']);
      break;
    } catch {
      if (Date.now() > deadline || !running()) {
        stopNow();
        throw new Error(`PostgreSQL did not start:\n${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url: `postgres://stepwise@127.0.0.1:${port}/postgres`,
    /** Fast shutdown; after a grace period, the whole process group is killed. */
    async stop() {
      if (stopped) return;
      signal(postmaster() ?? server.pid, 'SIGINT');
      let timer;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
      stopNow();
      process.off('exit', stopNow);
    },
    stopNow,
  };
}
