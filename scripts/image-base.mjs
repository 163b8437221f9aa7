// Makes a base image for the Dockerfile where no container registry is reachable: Debian
// bookworm (debootstrap, from Debian's mirror) with this machine's Node.js and npm in it, committed
// with buildah. Then: buildah build --build-arg BASE_IMAGE=localhost/stepwise-base:bookworm .
//   node scripts/image-base.mjs [IMAGE]   (as root; needs buildah and debootstrap)
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { run } from './run.mjs';

export const LOCAL_BASE_IMAGE = 'localhost/stepwise-base:bookworm';

/** Runs a command, failing with its name when it exits otherwise than 0. */
async function must(command, args) {
  const code = await run(command, args);
  if (code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${code}`);
}

/** Builds the base image; `buildah` is the command with its global options (e.g. a storage driver). */
export async function makeBaseImage(image = LOCAL_BASE_IMAGE, buildah = ['buildah']) {
  const work = mkdtempSync(join(tmpdir(), 'stepwise-base-'));
  const rootfs = join(work, 'rootfs');
  try {
    await must('debootstrap', ['--variant=minbase', 'bookworm', rootfs, 'http://deb.debian.org/debian']);
    rmSync(join(rootfs, 'var', 'cache', 'apt', 'archives'), { recursive: true, force: true });
    rmSync(join(rootfs, 'var', 'lib', 'apt', 'lists'), { recursive: true, force: true });
    // This Node.js, and the npm beside it (for npx).
    cpSync(process.execPath, join(rootfs, 'usr', 'local', 'bin', 'node'));
    const npm = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm');
    cpSync(npm, join(rootfs, 'usr', 'local', 'lib', 'node_modules', 'npm'), { recursive: true, verbatimSymlinks: true });
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(rootfs, 'usr', 'local', 'bin', 'npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(rootfs, 'usr', 'local', 'bin', 'npx'));
    // This machine's certificate authorities (a proxy that inspects TLS adds its own), for npx to
    // reach the npm registry at build time as this machine does.
    const authorities = '/etc/ssl/certs/ca-certificates.crt';
    const trusted = existsSync(authorities);
    if (trusted) {
      mkdirSync(join(rootfs, dirname(authorities)), { recursive: true });
      cpSync(authorities, join(rootfs, authorities));
    }
    // The folder becomes the image's single layer.
    await must('tar', ['-C', rootfs, '-cf', join(work, 'rootfs.tar'), '.']);
    const container = await capture([...buildah, 'from', 'scratch']);
    await must(buildah[0], [...buildah.slice(1), 'add', container, join(work, 'rootfs.tar'), '/']);
    await must(buildah[0], [
      ...buildah.slice(1),
      'config',
      '--env',
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ...(trusted ? ['--env', `NODE_EXTRA_CA_CERTS=${authorities}`] : []),
      '--cmd',
      'node',
      container,
    ]);
    await must(buildah[0], [...buildah.slice(1), 'commit', '--rm', container, image]);
    return image;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Runs a command and returns what it printed, trimmed. */
async function capture(command) {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) => execFile(command[0], command.slice(1), (error, stdout) => (error ? reject(error) : resolve(stdout.trim()))));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`built ${await makeBaseImage(process.argv[2])}`);
}
