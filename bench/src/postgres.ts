// A PostgreSQL server for the benchmarks, with the settings a real installation keeps: every
// commit reaches the disk before it is acknowledged (fsync, synchronous_commit and
// full_page_writes on). The test suite's server (scripts/postgres.mjs) turns those off, which is
// right for tests and wrong for figures. A fresh cluster in a temporary folder, on 127.0.0.1 only,
// removed afterwards; each Stepwise server gets a new, empty database of its own.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.ts';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/** The server settings the figures are taken with. */
export const DURABLE_SETTINGS = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', max_connections: '300' } as const;

function findBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((version) => existsSync(join(base, version, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] && join(base, versions[0], 'bin');
}

/** The server refuses to run as root: run its programs as the postgres user then. */
function asPostgres(binary: string, args: string[]): [string, string[]] {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
}

export interface BenchPostgres {
  /** The server's version, as `postgres --version` prints it. */
  readonly version: string;
  readonly settings: typeof DURABLE_SETTINGS;
  /** Creates a new, empty database and returns its URL. */
  newDatabase(): Promise<string>;
  /** Writes every dirty page now (CHECKPOINT), so that one measurement's writes do not spill into the next. */
  checkpoint(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the server; throws when PostgreSQL is not installed (Debian's "postgresql" package). */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const bin = findBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed (Debian package "postgresql")');
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-pg-'));
  if (isRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  execFileSync(...asPostgres(join(bin, 'initdb'), ['-D', dir, '-A', 'trust', '-U', 'stepwise', '-E', 'UTF8']), { stdio: 'ignore' });

  const port = await freePort();
  const settings = Object.entries(DURABLE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const [command, args] = asPostgres(join(bin, 'postgres'), ['-D', dir, '-h', '127.0.0.1', '-p', String(port), '-k', dir, ...settings]);
  const server = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  server.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const postmaster = () => {
    try {
      const pid = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const signal = (pid: number | undefined, name: NodeJS.Signals) => {
    try {
      if (pid) process.kill(pid, name);
    } catch {
      // Already gone.
    }
  };
  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    signal(postmaster(), 'SIGQUIT');
    signal(-server.pid!, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  // Whatever ends the benchmark, the server does not outlive it.
  process.once('exit', stopNow);

  const psql = (sql: string) => run(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'stepwise', '-d', 'postgres', '-q', '-c', sql]);
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await run(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'stepwise', '-q']);
      break;
    } catch {
      if (Date.now() > deadline || server.exitCode !== null) {
        stopNow();
        throw new Error(`PostgreSQL did not start:\n${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const shown = (
    await run(join(bin, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'stepwise',
      '-d',
      'postgres',
      '-Atc',
      'show fsync; show synchronous_commit; show full_page_writes',
    ])
  ).stdout
    .trim()
    .split('\n');
  if (shown.join(',') !== 'on,on,on') {
    stopNow();
    throw new Error(`PostgreSQL is not running with durable settings (fsync, synchronous_commit, full_page_writes: ${shown.join(', ')})`);
  }
  const version = (await run(join(bin, 'postgres'), ['--version'])).stdout.trim();
  let databases = 0;
  return {
    version,
    settings: DURABLE_SETTINGS,
    async newDatabase() {
      const name = `bench_${++databases}`;
      await psql(`create database ${name}`);
      return `postgres://stepwise@127.0.0.1:${port}/${name}`;
    },
    async checkpoint() {
      await psql('checkpoint');
    },
    async stop() {
      if (stopped) return;
      signal(postmaster() ?? server.pid, 'SIGINT');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
      stopNow();
      process.off('exit', stopNow);
    },
  };
}
