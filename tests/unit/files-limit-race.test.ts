import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, SessionFiles } from '@stepwise/backend';
import { afterEach, describe, expect, it } from 'vitest';

let dataDir: string | undefined;
afterEach(() => {
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

describe('the number of files a session may hold', () => {
  // A count reads the folder while earlier writes rename their files and give their places back;
  // before the places went back through the count's queue, about one round in five stored 11.
  it('is never exceeded while earlier writes finish during a later write’s count', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'stepwise-limit-'));
    const files = new SessionFiles(loadConfig({ DATA_DIR: dataDir, SESSION_FILES_MAX: '10' }, { promptsDir: '' }));
    const rounds: { stored: number; inFolder: number }[] = [];
    for (let round = 0; round < 50; round++) {
      const session = randomUUID();
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, index) => files.write(session, `f-${index}.txt`, `file ${index}`, { source: 'user' })),
      );
      rounds.push({
        stored: results.filter((result) => result.status === 'fulfilled').length,
        inFolder: readdirSync(join(files.root, session.toLowerCase())).length,
      });
    }
    expect(rounds).toEqual(Array(50).fill({ stored: 10, inFolder: 10 }));
  });
});
