// `pnpm bench` (or `pnpm bench --quick`): Stepwise against the frameworks people would pick instead,
// and against the floor of bare openai SDK calls, on this machine. Writes bench/RESULTS.md and
// bench/results.json (with --quick or --only: bench/out/, so a smoke run never overwrites real
// figures). Options: see settings.ts.
import './guard.ts';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { cluster } from './cluster.ts';
import { concurrency } from './concurrency.ts';
import { footprint } from './footprint.ts';
import { overhead } from './overhead.ts';
import { root } from './processes.ts';
import { report } from './report.ts';
import { writeResults } from './write-results.ts';
import { requestPaths } from './request-paths.ts';
import { restateEngine } from './restate-engine.ts';
import { scale } from './scale.ts';
import { log, type Section, settings } from './settings.ts';
import { round } from './stats.ts';
import { prepareStores } from './stores.ts';
import { stopLatency } from './stop-latency.ts';
import { streaming } from './streaming.ts';

// Ctrl+C: end through process.exit, so the exit hooks stop every process this run started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const started = new Date();
const loadAtStart = round(loadavg()[0]!, 2);
const stores = await prepareStores(settings);
const sections = {
  footprint,
  overhead,
  stop: stopLatency,
  concurrency,
  streaming,
  requests: requestPaths,
  cluster,
  restate: restateEngine,
  scale,
} satisfies Record<Section, unknown>;
const figures: Partial<Record<Section, unknown>> = {};
/** The machine's 1-minute load average as each section began and ended: other work on it shows here. */
const load: Partial<Record<Section, { start: number; end: number }>> = {};
const failed: Partial<Record<Section, string>> = {};
try {
  for (const section of settings.sections) {
    const began = Date.now();
    const loadBefore = loadavg()[0]!;
    try {
      figures[section] = await sections[section](settings, stores);
    } catch (error) {
      // One section's failure must not lose the others' figures: it is reported instead.
      failed[section] = error instanceof Error ? error.message : String(error);
      log(`   ${section} failed: ${failed[section]}`);
    }
    load[section] = { start: round(loadBefore, 2), end: round(loadavg()[0]!, 2) };
    log(`   (${section}: ${round((Date.now() - began) / 1000, 0)} s; load average ${load[section].start} → ${load[section].end})`);
  }
} finally {
  await stores.close();
}
const results = {
  date: started.toISOString(),
  quick: settings.quick,
  tree: tree(),
  load: { atStart: loadAtStart, sections: load },
  failed,
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: round(totalmem() / 1024 ** 3, 0),
    node: process.version,
    platform: process.platform,
  },
  stores: stores.details,
  ...figures,
};
const folder = settings.quick || settings.partial ? join(root, 'bench', 'out') : join(root, 'bench');
mkdirSync(folder, { recursive: true });
writeResults(folder, results, report(results));
log(`wrote ${join(folder, 'RESULTS.md')} in ${round((Date.now() - started.getTime()) / 1000, 0)} s`);
process.exit(0);

/** The commit measured, and whether the tree had changes beyond it. */
function tree(): { commit: string; changed: boolean } | undefined {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), changed: git('status', '--porcelain', '--untracked-files=no').length > 0 };
  } catch {
    return undefined;
  }
}
