// The whole test suite: type checks, then unit and integration tests (vitest).
// Extra arguments go to vitest, e.g. `pnpm test unit/calculator`.
import { join } from 'node:path';
import { root, runNodeBin } from './run.mjs';

const args = process.argv.slice(2);

if (args.length === 0) {
  console.log('Type-checking…');
  for (const project of ['shared-types', 'backend', 'tests', 'frontend']) {
    const code = await runNodeBin('.', 'typescript', 'bin/tsc', ['-p', join(root, project)]);
    if (code !== 0) process.exit(code);
  }
}

const code = await runNodeBin('tests', 'vitest', 'vitest.mjs', ['run', ...args], { cwd: join(root, 'tests') });
process.exit(code);
