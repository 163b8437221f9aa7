import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { type ApprovalRule, parseApprovalRules } from './approval-rules.ts';
import {
  ENDPOINT_NAME,
  EndpointEntry,
  HttpEntry,
  PriceEntry,
  PURPOSE_GLOB,
  type RouteEntry,
  RouteValue,
  SERVER_NAME,
  StdioEntry,
} from './config-file-schema.ts';

/** One MCP server, as Stepwise starts or reaches it. */
export type McpServerConfig =
  | { transport: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd: string | undefined }
  | { transport: 'http'; url: string; headers: Record<string, string> };

/** One model a call may go to: its name, the endpoint that serves it, the fields it adds. */
export interface ModelTarget {
  model: string;
  /** A named endpoint of the config file's "endpoints"; unset: the one the environment sets up (OPENAI_BASE_URL, Azure). */
  endpoint?: string;
  /** Merged over LLM_PARAMS for these calls. */
  params: Record<string, unknown>;
  /** Whether the model can see images; unset: as LLM_VISION says. */
  vision?: boolean;
}

/**
 * Which model serves the calls whose purpose matches `purpose` (a glob: `research.*`,
 * `solver.expert_evaluator`, `*`), and the fallbacks tried in order when it fails (5xx, 429 after
 * retries, a timeout, a refused connection).
 */
export interface ModelRoute extends ModelTarget {
  purpose: string;
  fallbacks?: ModelTarget[];
}

/** An OpenAI-compatible endpoint (`base_url`) or an Azure OpenAI resource (`azure_endpoint`), by name. */
export type ModelEndpoint =
  | { kind: 'openai'; baseUrl: string; apiKey: string | undefined }
  | { kind: 'azure'; endpoint: string; apiKey: string | undefined; apiVersion: string | undefined };

/** A model's price in USD per million tokens. */
export interface ModelPrice {
  input: number;
  /** Prompt tokens the endpoint served from its cache; the input price when not given. */
  cachedInput?: number;
  output: number;
}

/** What the config file declares. */
export interface ConfigFile {
  mcpServers: Record<string, McpServerConfig>;
  /** `"approval": {"files__*": "ask"}`: each tool's approval policy, first match wins. */
  approval: ApprovalRule[];
  models: ModelRoute[];
  /** `"endpoints": {"ollama": {"base_url": "http://127.0.0.1:11434/v1"}}`: model servers a route's `NAME:model` names. */
  endpoints: Record<string, ModelEndpoint>;
  prices: Record<string, ModelPrice>;
}

const FileSchema = z.looseObject({
  mcpServers: z.record(z.string(), z.unknown()).default({}),
});

/**
 * Reads the config file. A missing file at the default path means "no servers"; a missing file
 * that STEPWISE_CONFIG names, bad JSON, or a bad entry stops startup with one line saying where.
 * `${NAME}` in a command, argument, env value, URL or header is replaced by that environment
 * variable, so secrets can stay out of the file.
 */
export function loadConfigFile(path: string, options: { required: boolean; env: Record<string, string | undefined> }): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !options.required) return { mcpServers: {}, models: [], endpoints: {}, prices: {}, approval: [] };
    throw new ConfigError(`Cannot read the config file ${path} (STEPWISE_CONFIG): ${(error as Error).message}`);
  }
  return parseConfigFile(text, path, options.env);
}

/** Parses the config file's text; `path` only names it in errors. */
export function parseConfigFile(text: string, path: string, env: Record<string, string | undefined>): ConfigFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`The config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const file = FileSchema.safeParse(json);
  if (!file.success) throw new ConfigError(`The config file ${path} must be a JSON object with an "mcpServers" object`);

  const mcpServers: Record<string, McpServerConfig> = {};
  for (const [name, entry] of Object.entries(file.data.mcpServers)) {
    const where = `mcpServers.${name} in ${path}`;
    if (!SERVER_NAME.test(name)) {
      throw new ConfigError(`Invalid server name "${name}" in ${path}: use 1-48 letters, digits, - or _ (it prefixes tool names)`);
    }
    const server = parseEntry(entry, where, env);
    if (server) mcpServers[name] = server;
  }
  const approval = parseApprovalRules((file.data as { approval?: unknown }).approval, path);
  const endpoints = parseEndpoints(file.data, path, env);
  return { mcpServers, models: parseModels(file.data, path, endpoints), endpoints, prices: parsePrices(file.data, path), approval };
}

/**
 * `"models": {"research.*": {"model": "…", "params": {…}}, "*": ["gpt-4o-mini", "ollama:llama3.1"]}`,
 * in the file's order (the first match wins). A string is a model, `NAME:model` one of the endpoint
 * NAME (a prefix that names no endpoint is part of the model's name, as in `llama3.1:70b`); a list
 * is the model and its fallbacks, in order.
 */
export function parseModels(json: object, path: string, endpoints: Record<string, ModelEndpoint>): ModelRoute[] {
  const models: unknown = (json as { models?: unknown }).models;
  if (models === undefined) return [];
  if (typeof models !== 'object' || models === null || Array.isArray(models)) {
    throw new ConfigError(`Invalid "models" in ${path}: must be an object of purpose globs, e.g. {"research.*": {"model": "gpt-4.1-mini"}}`);
  }
  return Object.entries(models).map(([purpose, entry]) => {
    if (!PURPOSE_GLOB.test(purpose)) {
      throw new ConfigError(`Invalid models."${purpose}" in ${path}: a purpose glob holds letters, digits, ".", "_", "-" and "*"`);
    }
    const parsed = RouteValue.safeParse(entry);
    if (!parsed.success) throw new ConfigError(`Invalid models."${purpose}" in ${path}: ${describe(parsed.error)}`);
    const targets = (Array.isArray(parsed.data) ? parsed.data : [parsed.data]).map((each) => {
      const target = toTarget(each, endpoints);
      if (target.endpoint !== undefined && !endpoints[target.endpoint]) {
        throw new ConfigError(`Invalid models."${purpose}" in ${path}: no endpoint "${target.endpoint}" in "endpoints"`);
      }
      return target;
    });
    const [first, ...fallbacks] = targets as [ModelTarget, ...ModelTarget[]];
    return { purpose, ...first, ...(fallbacks.length ? { fallbacks } : {}) };
  });
}

function toTarget(entry: string | z.infer<typeof RouteEntry>, endpoints: Record<string, ModelEndpoint>): ModelTarget {
  if (typeof entry !== 'string') {
    return {
      model: entry.model,
      params: entry.params,
      ...(entry.endpoint ? { endpoint: entry.endpoint } : {}),
      ...(entry.vision === undefined ? {} : { vision: entry.vision }),
    };
  }
  const colon = entry.indexOf(':');
  const prefix = colon > 0 ? entry.slice(0, colon) : '';
  if (prefix && endpoints[prefix] && colon < entry.length - 1) return { model: entry.slice(colon + 1), endpoint: prefix, params: {} };
  return { model: entry, params: {} };
}

/** `"endpoints": {"ollama": {"base_url": "…", "api_key": "${OLLAMA_KEY}"}, "azure": {"azure_endpoint": "https://…", "api_key": "${AZURE_OPENAI_API_KEY}"}}`. */
function parseEndpoints(json: object, path: string, env: Record<string, string | undefined>): Record<string, ModelEndpoint> {
  const entries: unknown = (json as { endpoints?: unknown }).endpoints;
  if (entries === undefined) return {};
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    throw new ConfigError(`Invalid "endpoints" in ${path}: must be an object of named endpoints, e.g. {"ollama": {"base_url": "http://127.0.0.1:11434/v1"}}`);
  }
  const endpoints: Record<string, ModelEndpoint> = {};
  for (const [name, entry] of Object.entries(entries)) {
    const where = `endpoints.${name} in ${path}`;
    if (!ENDPOINT_NAME.test(name)) throw new ConfigError(`Invalid endpoint name "${name}" in ${path}: use 1-48 letters, digits, - or _`);
    const parsed = EndpointEntry.safeParse(entry);
    if (!parsed.success)
      throw new ConfigError(`Invalid ${where}: give "base_url" (OpenAI-compatible) or "azure_endpoint" (Azure OpenAI), and "api_key" if it needs one`);
    const apiKey = parsed.data.api_key === undefined ? undefined : expandVariables(parsed.data.api_key, where, env);
    endpoints[name] =
      'base_url' in parsed.data
        ? { kind: 'openai', baseUrl: parsed.data.base_url, apiKey }
        : { kind: 'azure', endpoint: parsed.data.azure_endpoint, apiKey, apiVersion: parsed.data.api_version };
  }
  return endpoints;
}

/** `"prices": {"gpt-4o": {"input": 2.5, "cached_input": 1.25, "output": 10}}`, USD per million tokens. */
export function parsePrices(json: object, path: string): Record<string, ModelPrice> {
  const prices: unknown = (json as { prices?: unknown }).prices;
  if (prices === undefined) return {};
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices)) {
    throw new ConfigError(`Invalid "prices" in ${path}: must be an object of models, e.g. {"gpt-4o": {"input": 2.5, "output": 10}}`);
  }
  return Object.fromEntries(
    Object.entries(prices).map(([model, entry]) => {
      const parsed = PriceEntry.safeParse(entry);
      if (!parsed.success) throw new ConfigError(`Invalid prices."${model}" in ${path}: ${describe(parsed.error)}`);
      const { input, cached_input: cachedInput, output } = parsed.data;
      return [model, { input, output, ...(cachedInput === undefined ? {} : { cachedInput }) }];
    }),
  );
}

/** One MCP server entry (stdio or Streamable HTTP) as Stepwise starts it; undefined when it is disabled. Throws ConfigError saying what is wrong, `where` naming it. */
export function parseEntry(entry: unknown, where: string, env: Record<string, string | undefined>): McpServerConfig | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new ConfigError(`Invalid ${where}: must be an object with "command" (stdio) or "url" (Streamable HTTP)`);
  }
  const expand = (value: string) => expandVariables(value, where, env);
  const expandAll = (values: Record<string, string>) => Object.fromEntries(Object.entries(values).map(([key, value]) => [key, expand(value)]));

  if ('command' in entry) {
    const parsed = StdioEntry.safeParse(entry);
    if (!parsed.success) throw new ConfigError(`Invalid ${where}: ${describe(parsed.error)}`);
    if (parsed.data.disabled) return undefined;
    return {
      transport: 'stdio',
      command: expand(parsed.data.command),
      args: parsed.data.args.map(expand),
      env: expandAll(parsed.data.env),
      cwd: parsed.data.cwd === undefined ? undefined : expand(parsed.data.cwd),
    };
  }
  if ('url' in entry) {
    const parsed = HttpEntry.safeParse(entry);
    if (!parsed.success) throw new ConfigError(`Invalid ${where}: ${describe(parsed.error)}`);
    if (parsed.data.disabled) return undefined;
    if (parsed.data.type === 'sse') {
      throw new ConfigError(`Invalid ${where}: the old SSE transport is not supported; use the server's Streamable HTTP endpoint`);
    }
    const url = expand(parsed.data.url);
    if (!/^https?:\/\/[^\s]+$/.test(url) || !URL.canParse(url)) throw new ConfigError(`Invalid ${where}: "url" must be an http(s) URL`);
    return { transport: 'http', url, headers: expandAll(parsed.data.headers) };
  }
  throw new ConfigError(`Invalid ${where}: must have "command" (stdio) or "url" (Streamable HTTP)`);
}

function expandVariables(value: string, where: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
    const found = env[name];
    if (found === undefined) throw new ConfigError(`Invalid ${where}: it uses \${${name}}, which is not set in the environment`);
    return found;
  });
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return `${issue.path.join('.') || 'entry'} ${issue.message}`;
}
