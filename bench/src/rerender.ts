// Renders bench/RESULTS.md again from bench/results.json (after editing READING.md).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './processes.ts';
import { report } from './report.ts';
const results = JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8'));
writeFileSync(join(root, 'bench', 'RESULTS.md'), report(results));
