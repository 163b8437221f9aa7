// Moves an earlier release's embedded PostgreSQL data (DATA_DIR/db) into SQLite (DATA_DIR/stepwise.db).
// `pnpm migrate-data` uses DATA_DIR (default ./data); `pnpm migrate-data /path/to/data` names the folder.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveFrom, root } from './run.mjs';

const tsx = pathToFileURL(resolveFrom('backend', 'tsx')).href;
const child = spawn(process.execPath, ['--import', tsx, join(root, 'backend', 'src', 'migrate-data.ts'), ...process.argv.slice(2)], {
  stdio: 'inherit',
  cwd: process.cwd(),
  env: { ...process.env, TSX_TSCONFIG_PATH: join(root, 'backend', 'tsconfig.json') },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
