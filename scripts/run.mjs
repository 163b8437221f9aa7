// Small helpers shared by the workspace scripts: run a command, find a package's binary.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs a command with inherited output; resolves with its exit code. */
export function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', cwd: root, ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Path of a package's file as resolved from one workspace package (e.g. 'tsx/cli' from 'backend'). */
export function resolveFrom(workspacePackage, specifier) {
  return createRequire(join(root, workspacePackage, 'package.json')).resolve(specifier);
}

/** Runs a package's bin script (a JS file) with this Node. */
export function runNodeBin(workspacePackage, packageName, binPath, args, options = {}) {
  const packageJson = resolveFrom(workspacePackage, `${packageName}/package.json`);
  return run(process.execPath, [join(dirname(packageJson), binPath), ...args], options);
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Installs a Debian package (as root, or through passwordless sudo); resolves with whether it worked. */
export async function aptInstall(name) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const isRoot = process.getuid?.() === 0;
  const apt = (...args) => (isRoot ? run('apt-get', args, { env }) : run('sudo', ['-n', 'apt-get', ...args], { env }));
  return (await apt('update', '-qq')) === 0 && (await apt('install', '-y', '-qq', name)) === 0;
}

/**
 * How to end a server started in a process group of its own (spawned detached) whose data sits in
 * `dir`: stopNow() kills the group and removes the dir at once (for exit hooks and failed starts),
 * stop() asks it to end (SIGTERM), waits up to `graceMs`, then does the same.
 */
export function groupStopper(child, dir, graceMs) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const signal = (name) => {
    try {
      process.kill(-child.pid, name);
    } catch {
      // Already gone.
    }
  };
  const stopNow = () => {
    signal('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  const stop = async () => {
    signal('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, graceMs))]);
    stopNow();
  };
  return { exited, stopNow, stop };
}
