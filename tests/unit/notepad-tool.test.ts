import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNotepadTool, loadConfig, NOTEPAD_FILE, SessionFiles } from '@stepwise/backend';
import { afterEach, describe, expect, it } from 'vitest';

let dataDir: string | undefined;
afterEach(() => {
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

function notepad() {
  dataDir = mkdtempSync(join(tmpdir(), 'stepwise-notepad-'));
  const files = new SessionFiles(loadConfig({ DATA_DIR: dataDir }, { promptsDir: '' }));
  const tool = createNotepadTool(files);
  const sessionId = randomUUID();
  const append = (text: string) => tool.execute({ operation: 'append', text }, { sessionId, runId: randomUUID(), signal: new AbortController().signal });
  return { files, sessionId, append };
}

describe('the notepad tool', () => {
  it('keeps every note of appends made at once (one reply’s tool calls run together)', async () => {
    const { files, sessionId, append } = notepad();
    await Promise.all(Array.from({ length: 8 }, (_, index) => append(`note ${index}`)));
    const lines = (await files.readWhole(sessionId, NOTEPAD_FILE))!.trim().split('\n');
    expect(lines.sort()).toEqual(Array.from({ length: 8 }, (_, index) => `- note ${index}`));
  });

  it('keeps older notes once the notepad is longer than the end the prompts show', async () => {
    const { files, sessionId, append } = notepad();
    const notes = Array.from({ length: 12 }, (_, index) => `${index}: ${'x'.repeat(1_000)}`);
    for (const note of notes) await append(note);
    const text = (await files.readWhole(sessionId, NOTEPAD_FILE))!;
    expect(text.trim().split('\n')).toEqual(notes.map((note) => `- ${note}`));
    expect(await append('last')).toBe('Noted. The notepad has 13 note(s).');
  });
});
