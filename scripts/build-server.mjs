// Compiles the server into one JavaScript file, backend/dist/server.js, and writes the file that
// `pnpm start` runs, backend/dist/main.js (`node backend/dist/main.js`), beside it.
// Running the compiled file rather than the TypeScript sources through tsx's loader starts the
// server in about two thirds of the time and keeps the compiler out of its memory (see
// bench/RESULTS.md, section 0). Packages stay in node_modules; only Stepwise's own code (the
// backend and @stepwise/shared-types) goes into the file. It takes a fraction of a second, so
// `pnpm start` compiles every time and never runs a stale build.
//   node scripts/build-server.mjs [OUTFILE]
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './run.mjs';

export const serverBundle = join(root, 'backend', 'dist', 'main.js');

/**
 * Builds the server into server.js beside `outfile`, and writes `outfile`, the file to run. The
 * files sit at the depth of backend/src so their relative paths hold.
 */
export async function buildServer(outfile = serverBundle) {
  const backend = join(root, 'backend');
  const esbuild = createRequire(join(backend, 'package.json'))('esbuild');
  const { dependencies } = JSON.parse(readFileSync(join(backend, 'package.json'), 'utf8'));
  const code = join(dirname(outfile), 'server.js');
  if (resolve(outfile) === code) throw new Error(`${outfile}: the compiled server is server.js; name the file to run otherwise`);
  const { metafile } = await esbuild.build({
    entryPoints: [join(backend, 'src', 'main.ts')],
    outfile: code,
    metafile: true,
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
  const output = Object.values(metafile.outputs).find((candidate) => candidate.entryPoint !== undefined);
  const packages = [
    ...new Set(output.imports.filter((entry) => entry.external && entry.kind === 'import-statement' && !isBuiltin(entry.path)).map((entry) => entry.path)),
  ];
  writeFileSync(outfile, entrySource(basename(code), packages));
  // A map of an earlier layout, when main.js was the compiled server itself.
  rmSync(`${outfile}.map`, { force: true });
  return outfile;
}

/**
 * The file that runs the server. Stack traces should name the TypeScript files and lines, which
 * `node --enable-source-maps` does, but that flag also has Node read and parse the source map of
 * every package that ships one (openai, kysely, zod and others), at every start. Here the packages
 * the server imports at start are loaded first, with source maps still off; then maps are turned
 * on and the server's own code is loaded, so of what a start loads only the server's map is read.
 * (Packages loaded later, when a setting needs them: PostgreSQL's, Redis's, MCP's, Restate's, have
 * their maps read then.) Loading them first changes nothing else: the server's code imports them
 * in the same order before any of it runs.
 */
function entrySource(code, packages) {
  return [
    '// Written by scripts/build-server.mjs: runs the compiled server (server.js) with its source map.',
    ...packages.map((name) => `import ${JSON.stringify(name)};`),
    'process.setSourceMapsEnabled(true);',
    `await import(${JSON.stringify(`./${code}`)});`,
    '',
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outfile = await buildServer(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`built ${outfile}`);
}
