import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqlStore } from '@stepwise/backend';

/**
 * SQLite stores for a test file: each `open()` gives a store over a new, empty database (in a
 * file of a temporary folder, or in memory) and closes the one before; `teardown()` closes the
 * last and removes the folders. Opening one takes well under a millisecond.
 */
export function sqliteTestStores(where: 'file' | 'memory'): { open: () => Promise<SqlStore>; teardown: () => Promise<void> } {
  const folders: string[] = [];
  let current: SqlStore | undefined;
  return {
    async open() {
      await current?.close();
      if (where === 'memory') {
        current = await openSqliteStore(':memory:');
        return current;
      }
      const folder = mkdtempSync(join(tmpdir(), 'stepwise-sqlite-'));
      folders.push(folder);
      current = await openSqliteStore(join(folder, 'stepwise.db'));
      return current;
    },
    async teardown() {
      await current?.close();
      current = undefined;
      for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
    },
  };
}
