import { z } from 'zod';
import { formatSize } from '@stepwise/shared-types';
import { ERROR_CODE, FileError } from '../errors.ts';
import { isImageKind, mediaKind } from '../files/media.ts';
import { parsePageRange } from '../files/pdf-text.ts';
import type { SessionFiles } from '../files/session-files.ts';
import type { Tool } from './tool.ts';

const NAME_DESCRIPTION = 'A file name as list_files shows it (session files are flat: no folders)';

const ListFilesArgs = z.object({});
const ReadFileArgs = z.object({
  name: z.string().describe(NAME_DESCRIPTION),
  offset: z.number().int().min(0).default(0).describe('Byte offset to start reading at (default 0)'),
  length: z.number().int().min(1).optional().describe('How many bytes to read at most (default and maximum: the cap)'),
  pages: z.string().max(40).optional().describe('PDFs only: the pages to read, e.g. "3", "3-5" or "7-" (default: from page 1 as far as the cap allows)'),
});
const WriteFileArgs = z.object({
  name: z.string().describe('The file name to write (replaces a file of that name)'),
  content: z.string().describe('The whole text of the file'),
});

/**
 * list_files, read_file and write_file: the session's own folder, nothing outside it. Names are
 * checked by SessionFiles, so `../x`, absolute paths, NUL bytes and links are refused there.
 */
export function createFileTools(files: SessionFiles, options: { readCapBytes: number }): Tool[] {
  const cap = options.readCapBytes;

  const listFiles: Tool<z.infer<typeof ListFilesArgs>> = {
    name: 'list_files',
    description: "List the files in this chat session's folder (uploaded by the user or written by the agent), with their sizes.",
    source: 'builtin',
    parameters: ListFilesArgs,
    async execute(_args, { sessionId }) {
      const list = await files.list(sessionId);
      if (list.length === 0) return 'No files in this session.';
      return list.map((file) => `${file.name}\t${formatSize(file.size)}\t${file.modified}`).join('\n');
    },
  };

  const readFile: Tool<z.infer<typeof ReadFileArgs>> = {
    name: 'read_file',
    description: `Read a text file or a PDF of this session. Text: at most ${cap} bytes from "offset"; when the file goes on, the result says which offset to read next. PDF: its text page by page ("pages", e.g. "3-5"), at most ${cap} characters; the result says which pages to read next.`,
    source: 'builtin',
    parameters: ReadFileArgs,
    async execute({ name, offset, length, pages }, { sessionId }) {
      if (mediaKind(name) === 'pdf') return readPdf(files, sessionId, name, pages ?? '1-', Math.min(length ?? cap, cap));
      if (pages !== undefined) return `Error: "pages" reads PDFs; ${name} is read by byte "offset"`;
      if (isImageKind(mediaKind(name))) {
        throw new FileError(ERROR_CODE.notText, `"${name}" is an image; read_file reads text. Images attached to a message are shown to a model that can see.`);
      }
      const slice = await files.readText(sessionId, name, offset, Math.min(length ?? cap, cap));
      const header = `${name}: bytes ${slice.start}-${slice.end} of ${slice.size}, ${slice.lines} line${slice.lines === 1 ? '' : 's'} in all`;
      const more = slice.end < slice.size ? `\n[${slice.size - slice.end} more bytes: read_file with offset ${slice.end}]` : '';
      return `${header}\n${slice.text}${more}`;
    },
  };

  const writeFile: Tool<z.infer<typeof WriteFileArgs>> = {
    name: 'write_file',
    description: "Write a text file into this session's folder (the user can download it). Replaces a file of the same name.",
    source: 'builtin',
    // It creates and replaces files: a person approves each write unless a policy says otherwise.
    approval: () => 'ask',
    parameters: WriteFileArgs,
    async execute({ name, content }, { sessionId, runId, signal }) {
      // The run's signal reaches the write: after a stop, no file is created or replaced.
      const file = await files.write(sessionId, name, content, { source: 'agent', runId, signal });
      return `Wrote ${file.name} (${formatSize(file.size)})`;
    },
  };

  return [listFiles, readFile, writeFile] as Tool[];
}

/**
 * Pages of a session PDF as text: a header (the pages given, the PDF's pages and words in all),
 * then each page under a "--- page N ---" line, at most `cap` characters; a page cut short or
 * pages left over are named, with the range to read next.
 */
async function readPdf(files: SessionFiles, sessionId: string, name: string, range: string, cap: number): Promise<string> {
  const pages = await files.readPdf(sessionId, name);
  if (pages.length === 0) return `${name}: a PDF of 0 pages`;
  const { first, last } = parsePageRange(range, pages.length);
  const words = pages.reduce((sum, page) => sum + countWords(page), 0);
  let body = '';
  let shownLast = first - 1;
  let cut = false;
  for (let number = first; number <= last; number++) {
    const block = `--- page ${number} ---\n${pages[number - 1] || '(no text on this page)'}\n`;
    if (body.length + block.length > cap) {
      // The first page is shown even when it alone passes the cap (cut there); later pages wait for the next read.
      if (number === first) {
        body = block.slice(0, cap);
        shownLast = number;
        cut = true;
      }
      break;
    }
    body += block;
    shownLast = number;
  }
  const header = `${name}: pages ${first}-${shownLast} of ${pages.length}, ${words} words in all`;
  const notes: string[] = [];
  if (cut) notes.push(`[page ${shownLast} is cut at ${cap} characters]`);
  if (shownLast < last) notes.push(`[pages ${shownLast + 1}-${last} not read yet: read_file with pages "${shownLast + 1}-${last}"]`);
  else if (last < pages.length) notes.push(`[${pages.length - last} more page${pages.length - last === 1 ? '' : 's'}: read_file with pages "${last + 1}-"]`);
  return `${header}\n${body.trimEnd()}${notes.length ? `\n${notes.join('\n')}` : ''}`;
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}
