import { readFileSync } from 'node:fs';

let known: string | undefined;

/**
 * Stepwise's version, from the workspace's package.json (which sits at the same place beside the
 * sources and the build): `--version`, MCP's server and client info, the trace resource's
 * service.version, the A2A card.
 */
export function version(): string {
  if (known) return known;
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    known = typeof manifest.version === 'string' ? manifest.version : 'unknown';
  } catch {
    known = 'unknown';
  }
  return known;
}
