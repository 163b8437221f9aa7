// Starts Stepwise: builds the web app once if it is missing, then runs the server.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { resolveFrom, root, run } from './run.mjs';

if (!existsSync(join(root, 'frontend', 'dist', 'index.html'))) {
  console.log('Building the web app (first start only)…');
  const code = await run(process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (code !== 0) process.exit(code);
}

const tsx = resolveFrom('backend', 'tsx/cli');
const server = spawn(
  process.execPath,
  [tsx, '--tsconfig', join(root, 'backend', 'tsconfig.json'), join(root, 'backend', 'src', 'main.ts')],
  { stdio: 'inherit', cwd: root },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal));
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
