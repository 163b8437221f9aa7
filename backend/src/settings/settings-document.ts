import { SECRET_MASK } from '@stepwise/shared-types';
import { z } from 'zod';
import { ApprovalEntries, type ApprovalPolicy } from '../config/approval-rules.ts';
import { HttpEntry, PriceEntry, PURPOSE_GLOB, RouteValue, SERVER_NAME, StdioEntry } from '../config/config-file-schema.ts';
import type { Config } from '../config/config.ts';

/** A limit an admin may change in the app: where it lives in the Config, the variable that pins it, its bounds. */
export interface LimitDefinition {
  name: string;
  variable: string;
  description: string;
  min: number;
  max?: number;
  /** A number of USD, not a whole number. */
  decimal?: boolean;
  /** Whether the limit may be "none" (null): then it is unset. */
  optional?: boolean;
  read(config: Config): number | undefined;
  write(config: Config, value: number | undefined): void;
}

/** The limits the app may change; each is read where it is used, so a change holds for the next run. */
export const LIMITS: readonly LimitDefinition[] = [
  {
    name: 'max_steps',
    variable: 'AGENT_MAX_STEPS',
    description: 'Iterations a run may take by default',
    min: 1,
    read: (config) => config.agent.maxStepsDefault,
    write: (config, value) => (config.agent.maxStepsDefault = value!),
  },
  {
    name: 'max_steps_limit',
    variable: 'AGENT_MAX_STEPS_LIMIT',
    description: 'The most iterations a run may ask for',
    min: 1,
    read: (config) => config.agent.maxStepsLimit,
    write: (config, value) => (config.agent.maxStepsLimit = value!),
  },
  {
    name: 'run_timeout_ms',
    variable: 'AGENT_RUN_TIMEOUT_MS',
    description: 'A run’s wall-clock budget (ms)',
    min: 1,
    read: (config) => config.agent.runTimeoutMs,
    write: (config, value) => (config.agent.runTimeoutMs = value!),
  },
  {
    name: 'run_token_budget',
    variable: 'AGENT_RUN_TOKEN_BUDGET',
    description: 'A run’s token budget (0: none)',
    min: 0,
    read: (config) => config.agent.runTokenBudget,
    write: (config, value) => (config.agent.runTokenBudget = value!),
  },
  {
    name: 'run_cost_budget_usd',
    variable: 'AGENT_RUN_COST_BUDGET_USD',
    description: 'A run’s default cost budget in USD (empty: none)',
    min: 0.000001,
    decimal: true,
    optional: true,
    read: (config) => config.agent.runCostBudgetUsd,
    write: (config, value) => (config.agent.runCostBudgetUsd = value),
  },
  {
    name: 'input_timeout_ms',
    variable: 'AGENT_INPUT_TIMEOUT_MS',
    description: 'How long a question waits for an answer (ms)',
    min: 1,
    read: (config) => config.agent.inputTimeoutMs,
    write: (config, value) => (config.agent.inputTimeoutMs = value!),
  },
  {
    name: 'chat_timeout_ms',
    variable: 'CHAT_TIMEOUT_MS',
    description: 'A plain answer’s wall-clock budget (ms)',
    min: 1,
    read: (config) => config.limits.chatTimeoutMs,
    write: (config, value) => (config.limits.chatTimeoutMs = value!),
  },
  {
    name: 'tool_timeout_ms',
    variable: 'TOOL_TIMEOUT_MS',
    description: 'How long one tool call may take (ms)',
    min: 1,
    read: (config) => config.tools.timeoutMs,
    write: (config, value) => (config.tools.timeoutMs = value!),
  },
  {
    name: 'context_budget_chars',
    variable: 'CONTEXT_BUDGET_CHARS',
    description: 'Characters of earlier conversation sent to the model',
    min: 1000,
    read: (config) => config.agent.contextBudgetChars,
    write: (config, value) => (config.agent.contextBudgetChars = value!),
  },
];

function limitSchema(limit: LimitDefinition) {
  const base = z.number({ error: `must be a number` }).finite().min(limit.min, `must be at least ${limit.min}`);
  const bounded = limit.max === undefined ? base : base.max(limit.max, `must be at most ${limit.max}`);
  return (limit.decimal ? bounded : bounded.int('must be a whole number')).nullable().optional();
}

const Limits = z.strictObject(Object.fromEntries(LIMITS.map((limit) => [limit.name, limitSchema(limit)])) as Record<string, ReturnType<typeof limitSchema>>);

/**
 * `PATCH /api/settings`: what to change. A section left out stays as it is; `null` clears it (the
 * config file's, the environment's or the built-in value holds again). `model_endpoint` and
 * `limits` change field by field; `models`, `prices`, `approval` and `mcp_servers` are replaced
 * whole, since their order matters (the first matching route or rule wins). The entries are the
 * config file's own schemas.
 */
export const SettingsPatch = z
  .strictObject({
    model_endpoint: z
      .strictObject({
        base_url: z
          .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
          .nullable()
          .optional()
          .describe('An OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1'),
        api_key: z.string().trim().min(1, 'must not be empty (null clears it)').max(4096).nullable().optional().describe('Write-only: never sent back'),
      })
      .optional(),
    model: z.string().trim().min(1, 'must not be empty').max(200).nullable().optional().describe('The model every purpose without a route uses'),
    models: z.record(z.string().regex(PURPOSE_GLOB, 'a purpose glob holds letters, digits, ".", "_", "-" and "*"'), RouteValue).nullable().optional(),
    prices: z.record(z.string().trim().min(1).max(200), PriceEntry).nullable().optional(),
    approval: ApprovalEntries.nullable().optional(),
    mcp_servers: z
      .record(z.string().regex(SERVER_NAME, 'use 1-48 letters, digits, - or _'), z.union([StdioEntry, HttpEntry]))
      .nullable()
      .optional(),
    limits: Limits.optional(),
  })
  .describe('A change of the app settings (sections left out stay as they are; null clears one)');
export type SettingsPatch = z.infer<typeof SettingsPatch>;

type Entries<T> = Record<string, T>;

/** The app settings as stored: what admins set, nothing else. */
export interface AppSettings {
  model_endpoint?: { base_url?: string; api_key?: string };
  model?: string;
  models?: Entries<z.infer<typeof RouteValue>>;
  prices?: Entries<z.infer<typeof PriceEntry>>;
  approval?: Entries<ApprovalPolicy>;
  mcp_servers?: Entries<z.infer<typeof StdioEntry> | z.infer<typeof HttpEntry>>;
  limits?: Record<string, number>;
}

/** The stored settings after a change: sections replaced or cleared, the endpoint and limits field by field. */
export function applyPatch(stored: AppSettings, patch: SettingsPatch): AppSettings {
  const next: AppSettings = structuredClone(stored);
  const section = <K extends keyof AppSettings>(key: K, value: AppSettings[K] | null | undefined) => {
    if (value === undefined) return;
    if (value === null) delete next[key];
    else next[key] = value;
  };
  if (patch.model_endpoint) {
    const endpoint = { ...next.model_endpoint };
    for (const field of ['base_url', 'api_key'] as const) {
      const value = patch.model_endpoint[field];
      if (value === null) delete endpoint[field];
      else if (value !== undefined) endpoint[field] = value;
    }
    section('model_endpoint', Object.keys(endpoint).length ? endpoint : null);
  }
  section('model', patch.model);
  section('models', patch.models);
  section('prices', patch.prices);
  section('approval', patch.approval);
  section(
    'mcp_servers',
    patch.mcp_servers === undefined || patch.mcp_servers === null ? patch.mcp_servers : keepMaskedSecrets(patch.mcp_servers, stored.mcp_servers),
  );
  if (patch.limits) {
    const limits = { ...next.limits };
    for (const [name, value] of Object.entries(patch.limits)) {
      if (value === null) delete limits[name];
      else if (value !== undefined) limits[name] = value;
    }
    section('limits', Object.keys(limits).length ? limits : null);
  }
  return next;
}

type McpEntry = NonNullable<AppSettings['mcp_servers']>[string];

/** An MCP server's header and env values sent back as SECRET_MASK keep the values stored for that server. */
function keepMaskedSecrets(servers: Entries<McpEntry>, stored: Entries<McpEntry> | undefined): Entries<McpEntry> {
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => {
      const before = stored?.[name] as Record<string, unknown> | undefined;
      const kept = { ...server } as Record<string, unknown>;
      for (const field of ['headers', 'env'] as const) {
        const values = kept[field] as Record<string, string> | undefined;
        if (!values) continue;
        const old = (before?.[field] ?? {}) as Record<string, string>;
        kept[field] = Object.fromEntries(
          Object.entries(values).flatMap(([key, value]) => (value !== SECRET_MASK ? [[key, value]] : old[key] === undefined ? [] : [[key, old[key]]])),
        );
      }
      return [name, kept as McpEntry];
    }),
  );
}

/** An MCP server entry as shown: header and env values masked (they may hold tokens). */
export function maskedServer(server: object): Record<string, unknown> {
  const shown = { ...server } as Record<string, unknown>;
  for (const field of ['headers', 'env'] as const) {
    const values = shown[field] as Record<string, string> | undefined;
    if (values) shown[field] = Object.fromEntries(Object.keys(values).map((key) => [key, SECRET_MASK]));
  }
  return shown;
}
