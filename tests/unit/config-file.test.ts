import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfigFile, parseConfigFile } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

const parse = (json: unknown, env: Record<string, string> = {}) => parseConfigFile(JSON.stringify(json), 'stepwise.config.json', env);

describe('the config file', () => {
  it('reads stdio and Streamable HTTP servers in the shape other MCP clients use', () => {
    expect(
      parse({
        mcpServers: {
          everything: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], alwaysAllow: ['echo'] },
          remote: { url: 'http://127.0.0.1:3001/mcp', headers: { Authorization: 'Bearer x' } },
          off: { command: 'x', disabled: true },
        },
      }),
    ).toEqual({
      approval: [],
      mcpServers: {
        everything: { transport: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], env: {}, cwd: undefined },
        remote: { transport: 'http', url: 'http://127.0.0.1:3001/mcp', headers: { Authorization: 'Bearer x' } },
      },
      models: [],
      endpoints: {},
      prices: {},
    });
  });

  it("reads models per purpose in the file's order, and prices per million tokens", () => {
    const file = parse({
      models: { 'research.*': { model: 'gpt-4.1', params: { reasoning_effort: 'high' } }, 'solver.expert_evaluator': { model: 'gpt-4.1-mini' } },
      prices: { 'my-model': { input: 1, cached_input: 0.5, output: 4 } },
    });
    expect(file.models).toEqual([
      { purpose: 'research.*', model: 'gpt-4.1', params: { reasoning_effort: 'high' } },
      { purpose: 'solver.expert_evaluator', model: 'gpt-4.1-mini', params: {} },
    ]);
    expect(file.prices).toEqual({ 'my-model': { input: 1, cachedInput: 0.5, output: 4 } });
  });

  it('reads a list of models per purpose as the model and its fallbacks, on named endpoints', () => {
    const file = parse(
      {
        endpoints: {
          ollama: { base_url: 'http://127.0.0.1:11434/v1' },
          azure: { azure_endpoint: 'https://example.openai.azure.com', api_key: '${AZURE_KEY}', api_version: '2024-10-21' },
        },
        models: {
          '*': ['gpt-4o-mini', 'azure:gpt-4o-mini', 'ollama:llama3.1:70b', { model: 'llava', endpoint: 'ollama', vision: true }],
          chat: 'qwen2.5:7b',
        },
      },
      { AZURE_KEY: 'k' },
    );
    expect(file.endpoints).toEqual({
      ollama: { kind: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', apiKey: undefined },
      azure: { kind: 'azure', endpoint: 'https://example.openai.azure.com', apiKey: 'k', apiVersion: '2024-10-21' },
    });
    expect(file.models).toEqual([
      {
        purpose: '*',
        model: 'gpt-4o-mini',
        params: {},
        fallbacks: [
          { model: 'gpt-4o-mini', endpoint: 'azure', params: {} },
          { model: 'llama3.1:70b', endpoint: 'ollama', params: {} },
          { model: 'llava', endpoint: 'ollama', params: {}, vision: true },
        ],
      },
      // A prefix that names no endpoint is part of the model's name.
      { purpose: 'chat', model: 'qwen2.5:7b', params: {} },
    ]);
  });

  it.each([
    [{ models: { chat: [{ model: 'x', endpoint: 'nowhere' }] } }, /no endpoint "nowhere"/],
    [{ models: { chat: [] } }, /Invalid models."chat"/],
    [{ endpoints: { local: { base_url: 'not a url' } } }, /Invalid endpoints.local/],
    [{ endpoints: [] }, /Invalid "endpoints"/],
  ])('refuses a bad fallback list or endpoint: %j', (json, message) => {
    expect(() => parse(json)).toThrow(message);
  });

  it.each([
    [{ models: [] }, /Invalid "models".*must be an object/],
    [{ models: { 'bad purpose': { model: 'x' } } }, /Invalid models."bad purpose"/],
    [{ models: { chat: { model: '' } } }, /Invalid models."chat".*model/],
    [{ models: { chat: { name: 'x' } } }, /Invalid models."chat"/],
    [{ prices: { m: { input: -1, output: 1 } } }, /Invalid prices."m".*input must not be negative/],
    [{ prices: { m: { input: 1 } } }, /Invalid prices."m".*output/],
  ])('refuses a bad models or prices entry: %j', (json, message) => {
    expect(() => parse(json)).toThrow(message);
  });

  it('fills ${VARIABLES} from the environment, and names one that is missing', () => {
    const file = parse({ mcpServers: { remote: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } } } }, { TOKEN: 's3cret' });
    expect(file.mcpServers.remote).toMatchObject({ headers: { Authorization: 'Bearer s3cret' } });
    expect(() => parse({ mcpServers: { remote: { url: 'https://example.com/${PATH_PART}' } } })).toThrow(/PATH_PART.*not set/);
  });

  it.each([
    [{ mcpServers: { 'bad.name': { command: 'x' } } }, /Invalid server name "bad.name"/],
    [{ mcpServers: { a: { args: [] } } }, /mcpServers.a .*"command".*"url"/],
    [{ mcpServers: { a: { command: '' } } }, /mcpServers.a .*command must not be empty/],
    [{ mcpServers: { a: { command: 'x', args: 'not-a-list' } } }, /mcpServers.a .*args/],
    [{ mcpServers: { a: { url: 'ftp://example.com' } } }, /"url" must be an http\(s\) URL/],
    [{ mcpServers: { a: { url: 'http://example.com/sse', type: 'sse' } } }, /SSE transport is not supported/],
    [{ mcpServers: [] }, /must be a JSON object with an "mcpServers" object/],
  ])('refuses %j with a clear error', (json, message) => {
    expect(() => parse(json)).toThrow(ConfigError);
    expect(() => parse(json)).toThrow(message);
  });

  it('treats a missing file at the default path as no servers, but not one that STEPWISE_CONFIG names', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-config-'));
    expect(loadConfigFile(join(dir, 'none.json'), { required: false, env: {} })).toEqual({
      mcpServers: {},
      models: [],
      endpoints: {},
      prices: {},
      approval: [],
    });
    expect(() => loadConfigFile(join(dir, 'none.json'), { required: true, env: {} })).toThrow(/Cannot read the config file/);
    writeFileSync(join(dir, 'broken.json'), '{ "mcpServers": ');
    expect(() => loadConfigFile(join(dir, 'broken.json'), { required: false, env: {} })).toThrow(/not valid JSON/);
  });

  it('reads approval rules by tool name or glob, and refuses a bad policy naming it', () => {
    expect(parse({ mcpServers: {}, approval: { 'files__*': 'ask', everything__echo: 'auto', 'shell__*': 'deny' } }).approval).toEqual([
      { pattern: 'files__*', policy: 'ask' },
      { pattern: 'everything__echo', policy: 'auto' },
      { pattern: 'shell__*', policy: 'deny' },
    ]);
    expect(() => parse({ mcpServers: {}, approval: { write_file: 'sometimes' } })).toThrow(/approval\."write_file".*"auto", "ask" or "deny"/);
    expect(() => parse({ mcpServers: {}, approval: ['ask'] })).toThrow(/Invalid "approval"/);
  });
});
