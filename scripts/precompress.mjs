// Writes a Brotli (.br) and a gzip (.gz) copy beside each text file of the built web app, at the
// highest levels (done once, at build time), for the server to send to browsers that accept them.
//   node scripts/precompress.mjs [DIR]   (default frontend/dist)
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { root } from './run.mjs';

const COMPRESSIBLE = /\.(html|js|mjs|css|svg|json|txt|map|webmanifest)$/;
/** Below this a compressed copy saves less than its own headers cost. */
const MIN_BYTES = 1024;

/** Compresses every compressible file under `dir`; returns how many files it compressed. */
export function precompress(dir) {
  let count = 0;
  for (const entry of readdirSync(dir, { recursive: true })) {
    const path = join(dir, String(entry));
    if (!COMPRESSIBLE.test(path) || !statSync(path).isFile()) continue;
    const content = readFileSync(path);
    if (content.length < MIN_BYTES) continue;
    writeFileSync(
      `${path}.br`,
      brotliCompressSync(content, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: content.length } }),
    );
    writeFileSync(`${path}.gz`, gzipSync(content, { level: 9 }));
    count += 1;
  }
  return count;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = resolve(process.argv[2] ?? join(root, 'frontend', 'dist'));
  console.log(`compressed ${precompress(dir)} files in ${dir}`);
}
