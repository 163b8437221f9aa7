// Puts the figures of a partial run (bench/out/results.json, from `pnpm bench --only=…`) into the
// full run's bench/results.json, section by section, and renders bench/RESULTS.md again; the
// sections taken are named in the report with their own date and tree.
//   node --import tsx bench/src/merge-section.ts concurrency [cluster …]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { report } from './report.ts';
import { writeResults } from './write-results.ts';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..');
const full = JSON.parse(readFileSync(join(bench, 'results.json'), 'utf8'));
const partial = JSON.parse(readFileSync(join(bench, 'out', 'results.json'), 'utf8'));
const sections = process.argv.slice(2);
if (sections.length === 0) throw new Error('name the sections to take from bench/out/results.json');
for (const section of sections) {
  if (partial[section] === undefined) throw new Error(`bench/out/results.json has no figures for "${section}"`);
  full[section] = partial[section];
  delete full.failed?.[section];
  full.load.sections[section] = partial.load.sections[section];
  full.rerun = { ...full.rerun, [section]: { date: partial.date, tree: partial.tree } };
}
writeResults(bench, full, report(full));
console.log(`took ${sections.join(', ')} from bench/out/results.json into bench/results.json and RESULTS.md`);
