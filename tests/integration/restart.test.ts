import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeKilledServer } from '../helpers/restart-cases.ts';

// On PostgreSQL: restart-postgres.test.ts. On the embedded database each start opens a new data
// folder, which takes seconds on a busy machine.
describeKilledServer({
  name: 'the embedded database',
  env: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-data-'));
    return { env: { DATA_DIR: dir }, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  },
});
