import type { Reporter, TestModule } from 'vitest/node';

/** How many files the end of a run names. */
const SHOWN = 12;

/**
 * Names the slowest test files at the end of a run (time spent importing them and running their
 * tests), so that a file that grows slow is seen where it is run, not found by bisecting.
 */
export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules
      .map((module) => {
        const { duration, collectDuration, setupDuration } = module.diagnostic();
        return { file: module.relativeModuleId, ms: duration + collectDuration + setupDuration };
      })
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN);
    if (rows.length < 2) return;
    const width = Math.max(...rows.map((row) => row.file.length));
    console.log(`\n Slowest test files (import and tests):`);
    for (const row of rows) console.log(`   ${row.file.padEnd(width)}  ${(row.ms / 1000).toFixed(1).padStart(6)} s`);
  }
}
