import { invalid, printable } from './file-helpers.ts';

const MAX_NAME_BYTES = 255;

// Characters that some file systems or shells treat specially; uploads get "_" instead.
const RESERVED = /[<>:"|?*]/g;

/** Returns `name` (NFC-normalized) when it is a safe plain file name; throws FileError otherwise. */
export function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw invalid('A file name is required');
  const normalized = name.normalize('NFC');
  if (normalized.includes('\0')) throw invalid('File names cannot contain NUL bytes');
  if (/[/\\]/.test(normalized)) throw invalid(`"${printable(normalized)}" is a path; session files have plain names without / or \\`);
  if (normalized === '.' || normalized === '..') throw invalid(`"${normalized}" is not a file name`);
  if (normalized.startsWith('.')) throw invalid(`"${printable(normalized)}": names starting with "." are not allowed`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
  if (/[\u0000-\u001f\u007f]/.test(normalized)) throw invalid('File names cannot contain control characters');
  if (normalized.trim() !== normalized) throw invalid('File names cannot start or end with spaces');
  if (Buffer.byteLength(normalized) > MAX_NAME_BYTES) throw invalid(`File names are limited to ${MAX_NAME_BYTES} bytes`);
  return normalized;
}

/**
 * The name an uploaded file is stored under: trimmed, reserved characters replaced. Anything
 * that would reach outside the folder (separators, `..`, NUL) is refused, never rewritten.
 */
export function uploadName(raw: unknown): string {
  if (typeof raw !== 'string') throw invalid('A file name is required (?name=…)');
  return checkName(raw.normalize('NFC').trim().replace(RESERVED, '_'));
}
