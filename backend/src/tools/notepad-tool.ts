import { z } from 'zod';
import type { SessionFiles } from '../files/session-files.ts';
import { KeyedQueue } from '../util/keyed-queue.ts';
import type { Tool } from './tool.ts';

/** The notepad is a session file of this name, so the user sees it (and can download or delete it). */
export const NOTEPAD_FILE = 'notepad.md';
const MAX_NOTE_CHARS = 2_000;
/** The notepad as prompts show it: its end, when it grows long. */
const MAX_READ_CHARS = 8_000;

const NotepadArgs = z.object({
  operation: z.enum(['read', 'append']).describe('"read" the notes, or "append" one'),
  text: z.string().max(MAX_NOTE_CHARS).optional().describe('The note to append (for "append")'),
});

/** The session's notepad as text ('' when there is none, or it cannot be read: the caller goes on without it). */
export async function readNotepad(files: SessionFiles, sessionId: string): Promise<string> {
  try {
    const slice = await files.readText(sessionId, NOTEPAD_FILE, 0, 64 * 1024);
    const text = slice.text.trim();
    return text.length > MAX_READ_CHARS ? `…${text.slice(-MAX_READ_CHARS)}` : text;
  } catch {
    return '';
  }
}

/**
 * `notepad`: notes the agent keeps for this chat across runs (append, read), in the session file
 * notepad.md. Any strategy may use it; plan_execute reads it before planning.
 */
export function createNotepadTool(files: SessionFiles): Tool<z.infer<typeof NotepadArgs>> {
  /** Per session: its appends, one at a time. One reply's tool calls run together; each append adds to the last one's file. */
  const appends = new KeyedQueue();
  return {
    name: 'notepad',
    description: 'Notes kept for this chat across runs: "read" them, or "append" one (a fact, a decision, something to remember).',
    source: 'builtin',
    parameters: NotepadArgs,
    // Reading runs; an append changes what every later run reads, so a person approves it.
    approval: (args) => (args.operation === 'read' ? 'auto' : 'ask'),
    async execute({ operation, text }, { sessionId, runId, signal }) {
      if (operation === 'read') return (await readNotepad(files, sessionId)) || 'The notepad is empty.';
      const note = text?.trim();
      if (!note) throw new Error('append needs a non-empty "text"');
      return appends.run(sessionId, async () => {
        // The whole file, not the end the prompts show: an append never drops older notes.
        const current = ((await files.readWhole(sessionId, NOTEPAD_FILE, files.maxBytes)) ?? '').trim();
        const next = `${current ? `${current}\n` : ''}- ${note.replace(/\s*\n\s*/g, ' ')}\n`;
        await files.write(sessionId, NOTEPAD_FILE, next, { source: 'agent', runId, signal });
        return `Noted. The notepad has ${next.trim().split('\n').length} note(s).`;
      });
    },
  };
}
