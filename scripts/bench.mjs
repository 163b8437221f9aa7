// `pnpm bench [--quick]`: the benchmarks of bench/, in their own processes.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildServer } from './build-server.mjs';
import { resolveFrom, root, run } from './run.mjs';

const tsx = pathToFileURL(resolveFrom('bench', 'tsx')).href;
// Stepwise's server is measured as `pnpm start` runs it: compiled.
await buildServer();
const code = await run(process.execPath, ['--import', tsx, join(root, 'bench', 'src', 'main.ts'), ...process.argv.slice(2)], {
  env: { ...process.env, TSX_TSCONFIG_PATH: join(root, 'backend', 'tsconfig.json'), OPENAI_AGENTS_DISABLE_TRACING: '1' },
});
process.exit(code);
