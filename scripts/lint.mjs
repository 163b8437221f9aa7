// Checks format and lint rules (Biome, configured in biome.jsonc) over the whole workspace; warnings fail too.
// `pnpm lint --write` applies the formatting and the safe fixes.
import { runNodeBin } from './run.mjs';

const write = process.argv.includes('--write');
const code = await runNodeBin('.', '@biomejs/biome', 'bin/biome', ['check', ...(write ? ['--write'] : ['--error-on-warnings']), '.']);
process.exit(code);
