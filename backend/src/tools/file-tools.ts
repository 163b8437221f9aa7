import { z } from 'zod';
import { formatSize } from '@stepwise/shared-types';
import type { SessionFiles } from '../files/session-files.ts';
import type { Tool } from './tool.ts';

const NAME_DESCRIPTION = 'A file name as list_files shows it (session files are flat: no folders)';

const ListFilesArgs = z.object({});
const ReadFileArgs = z.object({
  name: z.string().describe(NAME_DESCRIPTION),
  offset: z.number().int().min(0).default(0).describe('Byte offset to start reading at (default 0)'),
  length: z.number().int().min(1).optional().describe('How many bytes to read at most (default and maximum: the cap)'),
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
    description: `Read a text file of this session. Returns at most ${cap} bytes from "offset"; when the file goes on, the result says which offset to read next.`,
    source: 'builtin',
    parameters: ReadFileArgs,
    async execute({ name, offset, length }, { sessionId }) {
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
