// Starts Stepwise: builds the web app once if it is missing, then runs the server.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveFrom, root, run } from './run.mjs';

if (!existsSync(join(root, 'frontend', 'dist', 'index.html'))) {
  console.log('Building the web app (first start only)…');
  const code = await run(process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (code !== 0) process.exit(code);
}

// One process: TypeScript is loaded in it (tsx's loader), so signals reach the server itself.
const tsx = pathToFileURL(resolveFrom('backend', 'tsx')).href;
const server = spawn(process.execPath, ['--import', tsx, join(root, 'backend', 'src', 'main.ts')], {
  stdio: 'inherit',
  cwd: root,
  env: { ...process.env, TSX_TSCONFIG_PATH: join(root, 'backend', 'tsconfig.json') },
});
let stopSignal;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopSignal = signal;
    server.kill(signal);
  });
}
// Stopped as asked (Ctrl+C): that is a clean end, not a failure for pnpm to report.
server.on('exit', (code, signal) => process.exit(code ?? (signal && signal === stopSignal ? 0 : 1)));
