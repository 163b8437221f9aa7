// Compiles the server into one JavaScript file, backend/dist/main.js, which `pnpm start` runs.
// Running the compiled file rather than the TypeScript sources through tsx's loader starts the
// server in about two thirds of the time and keeps the compiler out of its memory (see
// bench/RESULTS.md, section 0). Packages stay in node_modules; only Stepwise's own code (the
// backend and @stepwise/shared-types) goes into the file. It takes a fraction of a second, so
// `pnpm start` compiles every time and never runs a stale build.
//   node scripts/build-server.mjs [OUTFILE]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './run.mjs';

export const serverBundle = join(root, 'backend', 'dist', 'main.js');

/** Builds the server into `outfile`; the file sits at the depth of backend/src so its relative paths hold. */
export async function buildServer(outfile = serverBundle) {
  const backend = join(root, 'backend');
  const esbuild = createRequire(join(backend, 'package.json'))('esbuild');
  const { dependencies } = JSON.parse(readFileSync(join(backend, 'package.json'), 'utf8'));
  await esbuild.build({
    entryPoints: [join(backend, 'src', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: join(backend, 'tsconfig.json'),
    // Every package from node_modules is loaded from there as usual, workspace packages are compiled in.
    external: Object.keys(dependencies).filter((name) => !name.startsWith('@stepwise/')),
    // Stack traces name the TypeScript files and lines; the sources themselves are in the repository,
    // and leaving them out of the map makes it a fraction of the size Node reads at every start.
    sourcemap: true,
    sourcesContent: false,
    logLevel: 'warning',
  });
  return outfile;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outfile = await buildServer(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`built ${outfile}`);
}
