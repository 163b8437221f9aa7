import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENVIRONMENT_VARIABLES, configFileJsonSchema, parseCommand, parseConfigFile, version } from '@stepwise/backend';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const read = (name: string) => readFileSync(join(root, name), 'utf8');

describe('the config file schema', () => {
  it('is published as stepwise.schema.json, generated from the zod schema (node scripts/config-schema.mjs writes it)', () => {
    expect(JSON.parse(read('stepwise.schema.json'))).toEqual(configFileJsonSchema());
  });

  it('validates the example, which names it in $schema and which the server reads', () => {
    const example = JSON.parse(read('stepwise.config.example.json'));
    expect(example.$schema).toBe('./stepwise.schema.json');
    const validate = new Ajv2020({ strict: false }).compile(JSON.parse(read('stepwise.schema.json')));
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    const parsed = parseConfigFile(read('stepwise.config.example.json'), 'example', { REMOTE_MCP_TOKEN: 'secret' });
    expect(Object.keys(parsed.mcpServers)).toEqual(['everything', 'files', 'remote']);
    expect(parsed.approval).toEqual([
      { pattern: 'files__write_file', policy: 'ask' },
      { pattern: 'everything__*', policy: 'auto' },
    ]);
  });

  it('flags what the server would refuse: an unknown policy, a bad server name, a misspelt key', () => {
    const validate = new Ajv2020({ strict: false }).compile(configFileJsonSchema());
    expect(validate({ approval: { calculator: 'maybe' } })).toBe(false);
    expect(validate({ mcpServers: { 'no spaces': { command: 'x' } } })).toBe(false);
    expect(validate({ mcpServer: {} })).toBe(false);
    expect(validate({ prices: { m: { input: -1, output: 1 } } })).toBe(false);
  });
});

describe('the command line', () => {
  it('prints its options with --help, its version with --version, and refuses an unknown option', () => {
    const help = parseCommand(['--help']);
    expect(help).toEqual({ kind: 'print', text: expect.stringContaining('--config-schema') });
    expect(parseCommand(['-h'])).toEqual(help);
    expect(parseCommand(['--version'])).toEqual({ kind: 'print', text: `${version()}\n` });
    expect(version()).toBe(JSON.parse(read('package.json')).version);
    expect(parseCommand(['--nope'])).toEqual({ kind: 'usage_error', message: expect.stringContaining("'--nope'") });
    expect(parseCommand([])).toEqual({ kind: 'serve' });
  });

  it('names every environment variable the server reads in --help and in the README', () => {
    const help = (parseCommand(['--help']) as { text: string }).text;
    const readme = read('README.md');
    expect(ENVIRONMENT_VARIABLES.filter((name) => !help.includes(name))).toEqual([]);
    expect(ENVIRONMENT_VARIABLES.filter((name) => !new RegExp(`\\b${name}\\b`).test(readme))).toEqual([]);
  });
});
