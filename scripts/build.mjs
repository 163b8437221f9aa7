// Builds the web app into frontend/dist, which the server serves at /, with Brotli and gzip
// copies of its files.
import { join } from 'node:path';
import { precompress } from './precompress.mjs';
import { root, runNodeBin } from './run.mjs';

const dist = join(root, 'frontend', 'dist');
const code = await runNodeBin('frontend', 'vite', 'bin/vite.js', ['build'], { cwd: join(root, 'frontend') });
if (code === 0) console.log(`compressed ${precompress(dist)} files`);
process.exit(code);
