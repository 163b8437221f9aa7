// Builds the web app into frontend/dist, which the server serves at /.
import { join } from 'node:path';
import { root, runNodeBin } from './run.mjs';

const code = await runNodeBin('frontend', 'vite', 'bin/vite.js', ['build'], { cwd: join(root, 'frontend') });
process.exit(code);
