// Writes stepwise.schema.json, the config file's JSON Schema, from its zod schema
// (backend/src/config/config-file-schema.ts), by asking the compiled server (--config-schema).
//   node scripts/config-schema.mjs
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildServer } from './build-server.mjs';
import { root, runNodeBin } from './run.mjs';

const schema = execFileSync(process.execPath, [await buildServer(), '--config-schema'], { cwd: root, encoding: 'utf8' });
const file = join(root, 'stepwise.schema.json');
writeFileSync(file, schema);
// In the workspace's format, so the lint passes on it.
await runNodeBin('.', '@biomejs/biome', 'bin/biome', ['format', '--write', file]);
console.log('wrote stepwise.schema.json');
