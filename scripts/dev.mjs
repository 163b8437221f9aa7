// Development: the server (restarted on change) and Vite with hot reload, which proxies /ws and /api to it.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { resolveFrom, root } from './run.mjs';

const tsx = resolveFrom('backend', 'tsx/cli');
const vite = join(dirname(resolveFrom('frontend', 'vite/package.json')), 'bin', 'vite.js');
const children = [
  spawn(process.execPath, [tsx, 'watch', '--tsconfig', join(root, 'backend', 'tsconfig.json'), join(root, 'backend', 'src', 'main.ts')], {
    stdio: 'inherit',
    cwd: root,
  }),
  spawn(process.execPath, [vite, '--host', '127.0.0.1'], { stdio: 'inherit', cwd: join(root, 'frontend') }),
];
const stopAll = (signal) => {
  for (const child of children) child.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stopAll(signal));
for (const child of children)
  child.on('exit', (code) => {
    stopAll('SIGTERM');
    process.exit(code ?? 0);
  });
