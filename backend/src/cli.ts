import { parseArgs } from 'node:util';
import { configFileJsonSchema } from './config/config-file-schema.ts';
import { ENVIRONMENT_VARIABLES } from './config/config.ts';
import { version } from './version.ts';

export { version };

/** What the command line asks for: serve (no arguments), or print something and exit. */
export type Command = { kind: 'serve' } | { kind: 'print'; text: string } | { kind: 'usage_error'; message: string };

/** The `--help` text. */
export function usage(): string {
  return `Stepwise ${version()}: a self-hosted realtime agent chat.

Usage: stepwise [options]
       (from a checkout: npx -y pnpm@10 start; in the image: node backend/dist/main.js)

With no options it starts the server: the web app at /, the WebSocket at /ws, the REST API
under /api (described at /api/openapi.json), the probes /api/health/live and /api/health/ready,
and Prometheus metrics at /metrics.

Options:
  -h, --help           print this text and exit
  -v, --version        print the version and exit
      --config-schema  print the config file's JSON Schema (stepwise.schema.json) and exit

Settings come from environment variables (the README says what each does) and from the config
file, ./stepwise.config.json or the file STEPWISE_CONFIG names (MCP servers, tool approval,
models per purpose, prices). The main ones:
  PORT, HOST                      where it listens (default 127.0.0.1:8787)
  AUTH_TOKEN                      a shared token; needed (or AUTH_MODE=oidc or header) beyond loopback
  LLM_PROVIDER                    openai, azure or demo (the offline demo model)
  OPENAI_BASE_URL, OPENAI_API_KEY, LLM_MODEL
  DATA_DIR, DATABASE_URL          where sessions are kept (SQLite in DATA_DIR, or PostgreSQL)

Every environment variable it reads:
${wrap(ENVIRONMENT_VARIABLES.join(' '), 96, '  ')}
`;
}

function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(indent + line);
  return lines.join('\n');
}

/** Reads the command line (without node and the script). */
export function parseCommand(args: readonly string[]): Command {
  let values: { help?: boolean; version?: boolean; 'config-schema'?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' }, 'config-schema': { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return { kind: 'usage_error', message: `${(error as Error).message}\nRun with --help to see the options.` };
  }
  if (values.help) return { kind: 'print', text: usage() };
  if (values.version) return { kind: 'print', text: `${version()}\n` };
  if (values['config-schema']) return { kind: 'print', text: `${JSON.stringify(configFileJsonSchema(), null, 2)}\n` };
  return { kind: 'serve' };
}
