// Renders bench/RESULTS.md again from bench/results.json (after editing READING.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './processes.ts';
import { report } from './report.ts';
import { writeResults } from './write-results.ts';
const results = JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8'));
writeResults(join(root, 'bench'), results, report(results));
