// The embedded store on its own: what one appendEvent costs (each is committed when it resolves),
// how long a new data folder takes to open, and the process's RSS before and after. SQLite under
// DB_SYNC=full and normal (the one SQL store, through Kysely); then the whole
// server (main.ts) started on a new data folder: time until it answers, and its RSS then.
//   cd bench && TSX_TSCONFIG_PATH=../backend/tsconfig.json node --import tsx src/store-commit.ts [--events=N]
// Each store is measured in a child process of its own, so that neither's memory counts for the other.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The store's own modules rather than the package's index, which loads the whole server.
import { openEmbeddedStore } from '../../backend/src/store/open-store.ts';
import type { Store } from '../../backend/src/store/store.ts';
import type { LoggedEvent } from '@stepwise/shared-types';
import { currentRss } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';

type Kind = 'sqlite-full' | 'sqlite-normal';

interface Measured {
  kind: Kind;
  openMs: number;
  /** The process's RSS with the store's modules loaded, before opening. */
  rssBeforeMb: number;
  rssMb: number;
  events: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

const argument = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];

async function open(kind: Kind, dataDir: string): Promise<Store> {
  return openEmbeddedStore(dataDir, { sync: kind === 'sqlite-full' ? 'full' : 'normal' });
}

/** An event of the size a step's events have (a reason text of a few hundred characters). */
function event(seq: number, runId: string): LoggedEvent {
  const text = 'The user asks for the product of two sums; the calculator tool will do it. '.repeat(4);
  return {
    type: 'agent_update',
    update_type: 'agent_reason',
    step: seq,
    content: text,
    seq,
    ts: new Date().toISOString(),
    run_id: runId,
  } as unknown as LoggedEvent;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(kind: Kind, events: number): Promise<Measured> {
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-store-bench-'));
  try {
    await import('../../backend/src/store/sql-store.ts');
    const rssBeforeMb = process.memoryUsage().rss / 2 ** 20;
    const started = performance.now();
    const store = await open(kind, dataDir);
    const openMs = performance.now() - started;
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 10 });
    const rssMb = process.memoryUsage().rss / 2 ** 20;
    // A warm-up that is not counted: statements prepared, caches filled.
    for (let seq = 1; seq <= 100; seq++) await store.appendEvent(sessionId, event(seq, runId));
    const timings: number[] = [];
    for (let seq = 101; seq < 101 + events; seq++) {
      const before = performance.now();
      await store.appendEvent(sessionId, event(seq, runId));
      timings.push((performance.now() - before) * 1000);
    }
    await store.close();
    const sorted = [...timings].sort((a, b) => a - b);
    return {
      kind,
      openMs,
      rssBeforeMb,
      rssMb,
      events,
      p50Us: percentile(sorted, 50),
      p99Us: percentile(sorted, 99),
      meanUs: timings.reduce((sum, value) => sum + value, 0) / timings.length,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const child = argument('kind') as Kind | undefined;
if (child) {
  console.log(JSON.stringify(await measure(child, Number(argument('events') ?? 5000))));
} else {
  const events = Number(argument('events') ?? 5000);
  const rows: Measured[] = [];
  for (const kind of ['sqlite-full', 'sqlite-normal'] as const) {
    const output = execFileSync(process.execPath, [...process.execArgv, process.argv[1]!, `--kind=${kind}`, `--events=${events}`], {
      env: process.env,
    });
    rows.push(JSON.parse(output.toString().trim().split('\n').at(-1)!) as Measured);
  }
  console.log('| store | open a new data dir | RSS before → after opening | appendEvent p50 | p99 | mean | events |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) {
    console.log(
      `| ${row.kind} | ${row.openMs.toFixed(1)} ms | ${row.rssBeforeMb.toFixed(0)} → ${row.rssMb.toFixed(0)} MB | ${row.p50Us.toFixed(0)} µs | ${row.p99Us.toFixed(0)} µs | ${row.meanUs.toFixed(0)} µs | ${row.events} |`,
    );
  }

  // The whole server on a new data folder (the model is never called while it starts).
  console.log('\n| server (main.ts), new data dir | until /api/health answers | RSS then |');
  console.log('| --- | ---: | ---: |');
  for (const sync of ['full', 'normal']) {
    const server = await startStepwise('http://127.0.0.1:9/v1', { env: { DB_SYNC: sync }, pollMs: 5 });
    const rss = currentRss(server.pid) / 2 ** 20;
    console.log(`| ${(server.store.description ?? server.store.label).replace(/ in \/\S+/, '')} | ${server.startMs.toFixed(0)} ms | ${rss.toFixed(0)} MB |`);
    await server.stop();
  }
}
