import { z } from 'zod';
import { ApprovalEntries } from './approval-rules.ts';

/**
 * The config file's schemas (stepwise.config.json). config-file.ts parses each part with them and
 * says where a file is wrong; the whole document's schema is published as JSON Schema
 * (stepwise.schema.json, written by `node scripts/config-schema.mjs`), so editors check a file
 * that names it in `$schema`.
 */

/** Server names become tool-name prefixes, which models accept only from this alphabet. */
export const SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;
/** A glob over model call purposes: `research.*`, `solver.expert_evaluator`, `*`. */
export const PURPOSE_GLOB = /^[A-Za-z0-9_.*-]{1,100}$/;

const strings = z.record(z.string(), z.string());

// Other MCP clients put extra keys in these entries (alwaysAllow, autoApprove, …); they are ignored,
// so an entry can be pasted in as it is.
export const StdioEntry = z
  .looseObject({
    type: z.literal('stdio').optional(),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's own ${NAME} syntax
    command: z.string().trim().min(1, 'must not be empty').describe('The program to start; ${NAME} is replaced by that environment variable'),
    args: z.array(z.string()).default([]).describe('Its arguments'),
    env: strings.default({}).describe('Environment variables set for it'),
    cwd: z.string().optional().describe('The folder it starts in'),
    disabled: z.boolean().optional().describe('Listed but not started'),
  })
  .describe('An MCP server Stepwise starts and talks to over stdio');

export const HttpEntry = z
  .looseObject({
    type: z.enum(['http', 'streamable-http', 'streamableHttp', 'sse']).optional().describe('"sse", the old transport, is refused'),
    url: z.string().trim().describe("The server's Streamable HTTP endpoint (http or https)"),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's own ${NAME} syntax
    headers: strings.default({}).describe('Headers sent with every request, e.g. {"Authorization": "Bearer ${TOKEN}"}'),
    disabled: z.boolean().optional().describe('Listed but not connected'),
  })
  .describe('An MCP server reached over Streamable HTTP');

export const RouteEntry = z
  .strictObject({
    model: z.string().trim().min(1, 'must not be empty').describe('The model (on Azure, the deployment) for these calls'),
    endpoint: z.string().trim().min(1).optional().describe('A name from `endpoints`; without it, the endpoint OPENAI_BASE_URL (or Azure) sets'),
    params: z.record(z.string(), z.unknown()).default({}).describe('Request parameters merged over LLM_PARAMS'),
    vision: z.boolean().optional().describe('Whether the model sees images (else LLM_VISION says)'),
  })
  .describe('The model for the calls whose purpose matches');

/** A route: one model (`"gpt-4.1"`, `"ollama:llama3.1"`, or an object), or a list of them, the first preferred and the others its fallbacks. */
export const RouteValue = z
  .union([z.string().trim().min(1, 'must not be empty'), RouteEntry, z.array(z.union([z.string().trim().min(1), RouteEntry])).min(1, 'must name a model')])
  .describe('A model ("gpt-4o-mini", "ENDPOINT:MODEL"), a route object, or a list of them: the first preferred, the next ones fallbacks');

/** Names of the endpoints routes may name. */
export const ENDPOINT_NAME = /^[A-Za-z0-9_-]{1,48}$/;
export const EndpointEntry = z
  .union([
    z.strictObject({ base_url: z.url({ protocol: /^https?$/ }), api_key: z.string().optional() }),
    z.strictObject({ azure_endpoint: z.url({ protocol: /^https$/ }), api_key: z.string().optional(), api_version: z.string().optional() }),
  ])
  .describe('An OpenAI-compatible endpoint (base_url) or an Azure OpenAI resource (azure_endpoint), with its key');

const price = z.number().finite().min(0, 'must not be negative');
export const PriceEntry = z
  .strictObject({
    input: price.describe('USD per million prompt tokens'),
    cached_input: price.optional().describe('USD per million prompt tokens served from the cache (the input price when not given)'),
    output: price.describe('USD per million completion tokens'),
  })
  .describe("A model's price");

/** The whole file, as editors check it. */
export const ConfigFileDocument = z
  .strictObject({
    $schema: z.string().optional().describe('This schema, for editors'),
    mcpServers: z
      .record(z.string().regex(SERVER_NAME), z.union([StdioEntry, HttpEntry]))
      .optional()
      .describe('MCP servers whose tools the agent may call, by name (1-48 letters, digits, - or _; it prefixes their tools)'),
    approval: ApprovalEntries.optional().describe(
      'Each tool\'s approval policy by name or glob, first match wins: "auto" runs it, "ask" waits for a person, "deny" never runs it',
    ),
    models: z
      .record(z.string().regex(PURPOSE_GLOB), RouteValue)
      .optional()
      .describe('Which model serves which calls, by purpose glob, first match wins (others use LLM_MODEL); a list names fallbacks'),
    endpoints: z.record(z.string().regex(ENDPOINT_NAME), EndpointEntry).optional().describe('Named model endpoints that routes may use'),
    prices: z.record(z.string(), PriceEntry).optional().describe('Prices of models, USD per million tokens, over the built-in ones'),
  })
  .meta({ title: 'Stepwise config file', description: 'stepwise.config.json, or the file STEPWISE_CONFIG names' });

/** The config file's JSON Schema (draft 2020-12), from ConfigFileDocument. */
export function configFileJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ConfigFileDocument, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
}
