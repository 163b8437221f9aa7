// The results files written as the project's formatter writes them, so a run's RESULTS.md and
// results.json pass `pnpm lint` as they are (files under bench/out/ are not checked and left as written).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export function writeResults(folder: string, results: unknown, markdown: string): void {
  const json = `${folder}/results.json`;
  const md = `${folder}/RESULTS.md`;
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(md, markdown);
  const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
  execFileSync(process.execPath, [biome, 'format', '--write', '--no-errors-on-unmatched', json, md], { stdio: ['ignore', 'ignore', 'inherit'] });
}
