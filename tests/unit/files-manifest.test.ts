import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, SessionFiles } from '@stepwise/backend';
import { afterEach, describe, expect, it, vi } from 'vitest';

let dataDir: string | undefined;
afterEach(() => {
  vi.useRealTimers();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

function sessionFiles() {
  dataDir = mkdtempSync(join(tmpdir(), 'stepwise-manifest-'));
  return new SessionFiles(loadConfig({ DATA_DIR: dataDir }, { promptsDir: '' }));
}

describe('the files manifest the prompts carry', () => {
  it('is empty for a session without a folder, and follows every write, replacement and delete', async () => {
    const files = sessionFiles();
    const session = randomUUID();
    expect(await files.manifest(session)).toBe('');

    await files.write(session, 'notes.md', 'abc', { source: 'user' });
    expect(await files.manifest(session)).toBe('- notes.md (3 B)');
    expect(await files.manifest(session)).toBe('- notes.md (3 B)');

    await files.write(session, 'data.csv', 'a,b\n1,2\n', { source: 'agent' });
    expect(unmarked(await files.manifest(session))).toBe('- data.csv (8 B)\n- notes.md (3 B)');

    await files.write(session, 'notes.md', 'x'.repeat(2048), { source: 'agent' });
    expect(unmarked(await files.manifest(session))).toBe('- data.csv (8 B)\n- notes.md (2.0 KB)');

    await files.remove(session, 'data.csv');
    expect(await files.manifest(session)).toBe('- notes.md (2.0 KB)');

    await files.removeSession(session);
    expect(await files.manifest(session)).toBe('');
  });

  it('marks the file written last as the newest, also when the file system gives two writes the same time', async () => {
    const files = sessionFiles();
    const session = randomUUID();
    await files.write(session, 'old.txt', 'old', { source: 'user' });
    await files.write(session, 'fresh.md', 'fresh', { source: 'user' });
    // The same modification time for both, as two writes within one tick of the file system's clock get.
    const folder = join(dataDir!, 'files', session);
    const same = new Date('2026-01-01T00:00:00Z');
    for (const name of ['old.txt', 'fresh.md']) utimesSync(join(folder, name), same, same);
    // A write of another session changes nothing of this one's order.
    await files.write(randomUUID(), 'elsewhere.md', 'x', { source: 'user' });
    expect(await files.manifest(session)).toBe('- fresh.md (5 B, newest)\n- old.txt (3 B)');
  });

  it('lists at most the asked number of files, saying how many more there are', async () => {
    const files = sessionFiles();
    const session = randomUUID();
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await files.write(session, name, name, { source: 'user' });
    expect(unmarked(await files.manifest(session, 2))).toBe('- a.txt (5 B)\n- b.txt (5 B)\n- … and 1 more (list_files shows them all)');
    expect(unmarked(await files.manifest(session))).toBe('- a.txt (5 B)\n- b.txt (5 B)\n- c.txt (5 B)');
  });

  it('shows files put into the folder by hand, or removed, within a second', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const files = sessionFiles();
    const session = randomUUID();
    await files.write(session, 'notes.md', 'abc', { source: 'user' });
    expect(await files.manifest(session)).toBe('- notes.md (3 B)');
    const folder = join(dataDir!, 'files', session);
    writeFileSync(join(folder, 'dropped.txt'), 'hello');
    vi.advanceTimersByTime(1_001);
    expect(unmarked(await files.manifest(session))).toBe('- dropped.txt (5 B)\n- notes.md (3 B)');
    unlinkSync(join(folder, 'notes.md'));
    vi.advanceTimersByTime(1_001);
    expect(await files.manifest(session)).toBe('- dropped.txt (5 B)');
  });

  it("is not listed again for another session's writes, and follows its own at once", async () => {
    // The clock stands still: the second's recheck never comes.
    vi.useFakeTimers({ toFake: ['performance'] });
    const files = sessionFiles();
    const [mine, other] = [randomUUID(), randomUUID()];
    await files.write(mine, 'notes.md', 'abc', { source: 'user' });
    expect(await files.manifest(mine)).toBe('- notes.md (3 B)');
    const folder = join(dataDir!, 'files', mine);
    // Put in by hand: only a new listing of the folder would show it.
    writeFileSync(join(folder, 'by-hand.txt'), 'x');
    await files.write(other, 'elsewhere.md', 'abc', { source: 'agent' });
    expect(await files.manifest(mine.toUpperCase())).toBe('- notes.md (3 B)');
    await files.write(mine.toUpperCase(), 'more.md', 'ab', { source: 'agent' });
    expect(unmarked(await files.manifest(mine))).toBe('- by-hand.txt (1 B)\n- more.md (2 B)\n- notes.md (3 B)');
  });
});

/** The manifest without its mark of the newest file (files written in the same millisecond tie). */
function unmarked(manifest: string): string {
  return manifest.replace(', newest)', ')');
}
