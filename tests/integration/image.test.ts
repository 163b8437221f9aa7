import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_BASE_IMAGE, makeBaseImage } from '../../scripts/image-base.mjs';
import { aptInstall, freePort } from '../../scripts/run.mjs';
import { spawnTracked, stopProcess } from '../helpers/process.ts';
import { TestClient } from '../helpers/ws-client.ts';

// Builds the container image from the Dockerfile with buildah and runs it. It takes minutes (a
// full install and build inside the image, and a Debian base made with debootstrap when no
// registry answers), so it runs only when asked for, as root or with passwordless sudo:
//   STEPWISE_IMAGE_TEST=1 npx -y pnpm@10 test integration/image
const enabled = process.env.STEPWISE_IMAGE_TEST === '1';
const why = enabled ? '' : ' (skipped: it builds the image with buildah, which takes minutes; run it with STEPWISE_IMAGE_TEST=1)';
// The reporter folds a skipped file into one line; the reason is said out loud.
if (!enabled) console.log(`the container image test${why}`);

const root = join(import.meta.dirname, '..', '..');
const IMAGE = 'localhost/stepwise:test';
const TOKEN = 'image-test-token-0123456789';
// vfs works everywhere (in a container too), at the cost of disk space.
const BUILDAH = ['buildah', '--storage-driver', process.env.STEPWISE_IMAGE_STORAGE_DRIVER ?? 'vfs'];
const exec = promisify(execFile);
const buildah = async (...args: string[]) =>
  (await exec(BUILDAH[0]!, [...BUILDAH.slice(1), ...args], { cwd: root, maxBuffer: 64 * 1024 * 1024 })).stdout.trim();

let base = '';
let container: string | undefined;
let server: ReturnType<typeof spawnTracked> | undefined;
let client: TestClient | undefined;

/** An official Node 22 image when a registry answers; else a Debian base made here. */
async function baseImage(): Promise<string> {
  try {
    await buildah('pull', 'docker.io/library/node:22-bookworm-slim');
    return 'docker.io/library/node:22-bookworm-slim';
  } catch {
    // Made once, by an earlier run of this test (or scripts/image-base.mjs).
    if (await buildah('inspect', '--type', 'image', LOCAL_BASE_IMAGE).then(Boolean, () => false)) return LOCAL_BASE_IMAGE;
    console.log('image test: no registry answers; making a Debian base with debootstrap');
    if (!(await hasCommand('debootstrap'))) expect(await aptInstall('debootstrap')).toBe(true);
    return makeBaseImage(undefined, BUILDAH);
  }
}

async function hasCommand(name: string): Promise<boolean> {
  return exec('sh', ['-c', `command -v ${name}`]).then(
    () => true,
    () => false,
  );
}

describe.skipIf(!enabled)(`the container image${why}`, () => {
  beforeAll(async () => {
    if (!(await hasCommand('buildah'))) expect(await aptInstall('buildah')).toBe(true);
    base = await baseImage();
    await buildah('build', '--isolation', 'chroot', '--network', 'host', '--format', 'docker', '--build-arg', `BASE_IMAGE=${base}`, '-t', IMAGE, '.');
  }, 60 * 60_000);

  afterAll(async () => {
    client?.socket.terminate();
    await stopProcess(server?.pid, { signal: 'SIGKILL' });
    // Removing a container on the vfs driver deletes a full copy of its files.
    if (container) await buildah('rm', container).catch(() => undefined);
  }, 5 * 60_000);

  it('is ready, serves the web app and answers on the demo model, as a non-root user', async () => {
    const inspect = JSON.parse(await buildah('inspect', '--type', 'image', IMAGE));
    const config = inspect.Docker.config;
    expect(config.User).toBe('stepwise');
    expect(config.Healthcheck.Test.join(' ')).toContain('/api/health/live');
    expect(Object.keys(config.Volumes)).toEqual(['/data']);
    console.log(
      `image test: ${IMAGE} is ${await buildah('images', '--format', '{{.Size}}', IMAGE)}, on ${await buildah('images', '--format', '{{.Size}}', base)} of ${base}`,
    );

    // No esbuild, tsx or PGlite among the packages it runs with.
    container = await buildah('from', IMAGE);
    const packages = await buildah('run', '--isolation', 'chroot', container, '--', 'ls', 'backend/node_modules', 'backend/node_modules/.pnpm');
    expect(packages).not.toMatch(/esbuild|tsx@|pglite/);

    // Listening beyond loopback with nobody signing in, it refuses to start.
    const refused = await buildah('run', '--isolation', 'chroot', '--network', 'host', container, '--', 'node', 'backend/dist/main.js').then(
      () => '',
      (error: { stderr: string }) => error.stderr,
    );
    expect(refused).toMatch(/listens beyond this machine, but nobody signs in/);

    const port = await freePort();
    await buildah('config', '--env', `PORT=${port}`, '--env', `AUTH_TOKEN=${TOKEN}`, '--env', 'LLM_PROVIDER=demo', '--env', 'DEMO_DELAY_MS=0', container);
    server = spawnTracked(
      BUILDAH[0]!,
      [...BUILDAH.slice(1), 'run', '--isolation', 'chroot', '--network', 'host', container, '--', 'node', 'backend/dist/main.js'],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        description: 'Stepwise in its image (buildah run)',
      },
    );
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Stepwise is ready')) resolve();
      };
      server!.stdout!.on('data', onData);
      server!.stderr!.on('data', onData);
      server!.once('exit', (code) => reject(new Error(`the image's server exited (${code}):\n${output}`)));
    });
    const url = `http://127.0.0.1:${port}`;
    expect((await fetch(`${url}/api/health/ready`)).status).toBe(200);
    const page = await fetch(url, { headers: { 'accept-encoding': 'br' } });
    expect(await page.text()).toMatch(/<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js">/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");

    client = await TestClient.connect(`ws://127.0.0.1:${port}/ws`, {}, { headers: { authorization: `Bearer ${TOKEN}` } });
    client.chat('What is 6*7?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'answered' });
    expect(events.find((event) => event.type === 'assistant_message')).toMatchObject({ content: expect.stringContaining('42') });
  }, 120_000);
});
