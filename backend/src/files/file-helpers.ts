import type { FileHandle } from 'node:fs/promises';
import { ERROR_CODE, FileError } from '../errors.ts';
import { abortReason } from '../util/abort.ts';

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

export function isContinuationByte(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

export function invalid(message: string): FileError {
  return new FileError(ERROR_CODE.invalidFileName, message);
}

export function notFound(name: string): FileError {
  return new FileError(ERROR_CODE.fileNotFound, `No file "${name}" in this session`);
}

export function printable(name: string): string {
  const shown = name.length > 80 ? `${name.slice(0, 80)}…` : name;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: shown in an error message
  return shown.replace(/[\u0000-\u001f\u007f]/g, '?');
}

/** Lines in `bytes`: its newlines, and one more when it ends without one. */
export function linesIn(bytes: Uint8Array): number {
  let lines = 0;
  for (const byte of bytes) if (byte === 0x0a) lines++;
  return bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? lines + 1 : lines;
}

/** The lines of a whole file, read 64 KiB at a time (files are at most FILE_MAX_BYTES). */
export async function countLines(handle: FileHandle, size: number): Promise<number> {
  const buffer = Buffer.alloc(Math.min(64 * 1024, size));
  let lines = 0;
  let last = 0x0a;
  for (let position = 0; position < size; ) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    for (let index = 0; index < bytesRead; index++) if (buffer[index] === 0x0a) lines++;
    last = buffer[bytesRead - 1]!;
    position += bytesRead;
  }
  return size > 0 && last !== 0x0a ? lines + 1 : lines;
}
