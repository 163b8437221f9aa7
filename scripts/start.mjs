// Starts Stepwise: builds the web app once if it is missing, then runs the server.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildServer } from './build-server.mjs';
import { root, run } from './run.mjs';

if (!existsSync(join(root, 'frontend', 'dist', 'index.html'))) {
  console.log('Building the web app (first start only)…');
  const code = await run(process.execPath, [join(root, 'scripts', 'build.mjs')]);
  if (code !== 0) process.exit(code);
}

// The server compiled afresh (well under a second), then run as plain JavaScript: it starts
// faster and lighter than through a TypeScript loader; source maps keep stack traces pointing
// at the TypeScript files.
let bundle;
try {
  bundle = await buildServer();
} catch (error) {
  console.error(`Could not compile the server: ${error.message}`);
  process.exit(1);
}
const server = spawn(process.execPath, [bundle, ...process.argv.slice(2)], { stdio: 'inherit', cwd: root });
let stopSignal;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopSignal = signal;
    server.kill(signal);
  });
}
// Stopped as asked (Ctrl+C): that is a clean end, not a failure for pnpm to report.
server.on('exit', (code, signal) => process.exit(code ?? (signal && signal === stopSignal ? 0 : 1)));
