import { formatSize } from '@stepwise/shared-types';

/** A size as people say it: "10 MB", "1.5 KB", "100 B". */
export function humanSize(bytes: number): string {
  return formatSize(bytes).replace(/\.0 /, ' ');
}

/**
 * A server message with byte counts in it ("Files are limited to 10485760 bytes; this one has
 * 20000000"), with each count in human units ("Files are limited to 10 MB; this one has 19.1 MB").
 */
export function withHumanSizes(message: string): string {
  return message
    .replace(/\b(\d+) bytes\b/g, (_match, bytes: string) => humanSize(Number(bytes)))
    .replace(/\b(this one has) (\d+)\b(?!\s*[A-Za-z%])/g, (_match, words: string, bytes: string) => `${words} ${humanSize(Number(bytes))}`);
}
