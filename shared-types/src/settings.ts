import { z } from 'zod';

/**
 * Where a setting's value in force comes from. Precedence: an environment variable, then the
 * config file, then what an admin set in the app, then the built-in default. A setting from the
 * environment or the config file is locked: the app cannot change it.
 */
export const SettingSource = z.object({
  kind: z.enum(['env', 'file', 'app', 'default']),
  /** The environment variable (env) or the config file's path (file). */
  name: z.string().optional(),
});
export type SettingSource = z.infer<typeof SettingSource>;

/** One setting as `GET /api/settings` shows it: its value in force, where that comes from, and whether the app may change it. */
const shown = <T extends z.ZodType>(value: T) => z.object({ value, source: SettingSource, locked: z.boolean() });

/** A secret (an API key): only whether it is set, never its value. */
export const SecretSetting = z.object({ set: z.boolean(), source: SettingSource, locked: z.boolean() });
export type SecretSetting = z.infer<typeof SecretSetting>;

/** One entry of a keyed setting (a model route, a price, an approval rule, an MCP server). */
const entry = <T extends z.ZodType>(value: T) => z.object({ key: z.string(), value, source: SettingSource, locked: z.boolean() });

/** One limit: its name in the API, the environment variable that pins it, its value in force. */
export const LimitSetting = z.object({
  name: z.string(),
  variable: z.string(),
  value: z.number().nullable(),
  description: z.string(),
  /** The lowest value it takes (it is a whole number unless `decimal`). */
  min: z.number(),
  decimal: z.boolean().optional(),
  source: SettingSource,
  locked: z.boolean(),
});
export type LimitSetting = z.infer<typeof LimitSetting>;

/** One setting a change touched, before and after, as text; a secret shows only as "set" or "not set". */
export const SettingChangeItem = z.object({ setting: z.string(), before: z.string().nullable(), after: z.string().nullable() });
export type SettingChangeItem = z.infer<typeof SettingChangeItem>;

/** One change of the settings: who made it, when, and what it changed. */
export const SettingsChange = z.object({
  version: z.number().int(),
  at: z.string(),
  by: z.object({ id: z.string(), name: z.string() }),
  changes: z.array(SettingChangeItem),
});
export type SettingsChange = z.infer<typeof SettingsChange>;

/** An MCP server's live status on the instance that answered. */
const McpLive = z.object({ status: z.enum(['connecting', 'connected', 'unavailable']), tools: z.number().int(), error: z.string().optional() });

/**
 * `GET /api/settings` (admins): the settings an admin may change in the app, as they are in force
 * on the instance that answers, each with its source; secrets only as `set`; the latest changes.
 */
export const SettingsView = z.object({
  /** The app settings' version in force here: every change adds one, and every instance applies it. */
  version: z.number().int(),
  provider: z.enum(['openai', 'azure', 'demo']),
  model_endpoint: z.object({ base_url: shown(z.string().nullable()), api_key: SecretSetting }),
  model: shown(z.string()),
  /** Model routes by purpose glob, in the order they are tried (the config file's first). */
  models: z.array(entry(z.unknown())),
  prices: z.array(entry(z.object({ input: z.number(), cached_input: z.number().optional(), output: z.number() }))),
  approval: z.array(entry(z.enum(['auto', 'ask', 'deny']))),
  /** MCP servers; header and env values are secrets and show as SECRET_MASK. */
  mcp_servers: z.array(entry(z.record(z.string(), z.unknown())).extend({ live: McpLive.optional() })),
  limits: z.array(LimitSetting),
  /** The latest changes, newest first. */
  changes: z.array(SettingsChange),
});
export type SettingsView = z.infer<typeof SettingsView>;

/**
 * What a secret value (an MCP server's header or env value) shows as. Sent back unchanged in a
 * PATCH, it keeps the value stored.
 */
export const SECRET_MASK = '••••••••';
