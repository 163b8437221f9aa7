import { STEER_MAX_CHARS_DEFAULT } from '@stepwise/shared-types';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import type { ApprovalRule } from './approval-rules.ts';
import type { McpServerConfig, ModelEndpoint, ModelPrice, ModelRoute } from './config-file.ts';

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, `must be an integer`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const boolean = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const url = z
  .string()
  .trim()
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));
const nonEmpty = z.string().trim().min(1, 'must not be empty');
const list = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
);

/** An IPv4 or IPv6 address, or a CIDR range of either. */
function validAddressOrRange(value: string): boolean {
  const [address, bits, extra] = value.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const prefix = Number(bits);
  return /^\d{1,3}$/.test(bits) && prefix <= (family === 4 ? 32 : 128);
}

/** Environment variables: PROTOCOL.md's table first, then Stepwise's own tuning knobs. */
const EnvSchema = z.object({
  PORT: integer(0, 65535).default(8787),
  HOST: nonEmpty.default('127.0.0.1'),
  LLM_PROVIDER: z.enum(['openai', 'azure', 'demo']).optional(),
  OPENAI_BASE_URL: url.optional(),
  OPENAI_API_KEY: nonEmpty.optional(),
  AZURE_OPENAI_ENDPOINT: url.optional(),
  AZURE_OPENAI_API_KEY: nonEmpty.optional(),
  AZURE_OPENAI_DEPLOYMENT: nonEmpty.optional(),
  OPENAI_API_VERSION: nonEmpty.optional(),
  /** A JSON object merged into every model request's body (reasoning_effort, max_completion_tokens, seed, …). */
  LLM_PARAMS: z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"reasoning_effort":"low"} (it is not valid JSON)' });
        return z.NEVER;
      }
    })
    .pipe(z.record(z.string(), z.unknown(), { error: 'must be a JSON object, e.g. {"reasoning_effort":"low"}' }))
    .optional(),
  HTTPS_PROXY: url.optional(),
  https_proxy: url.optional(),
  HTTP_PROXY: url.optional(),
  http_proxy: url.optional(),
  NO_PROXY: z.string().trim().optional(),
  no_proxy: z.string().trim().optional(),
  LLM_MODEL: nonEmpty.default('gpt-4o-mini'),
  AGENT_MAX_STEPS: integer(1).default(10),
  AGENT_MAX_STEPS_LIMIT: integer(1).default(50),
  AGENT_INPUT_TIMEOUT_MS: integer(1).default(300_000),
  DATA_DIR: nonEmpty.default('./data'),
  DATABASE_URL: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }))
    .optional(),
  REDIS_URL: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// URL' }))
    .optional(),
  INSTANCE_ID: z
    .string()
    .trim()
    .regex(/^[\w.-]{1,64}$/, 'letters, digits, ".", "_" or "-", at most 64')
    .optional(),
  CLUSTER_LEASE_MS: integer(500, 600_000).default(5_000),
  RUN_ENGINE: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['in-process', 'restate'], { error: 'must be in-process or restate' }))
    .default('in-process'),
  RESTATE_INGRESS_URL: url.optional(),
  RESTATE_ADMIN_URL: url.optional(),
  RESTATE_SERVICE_PORT: integer(0, 65535).default(9080),
  RESTATE_SERVICE_HOST: nonEmpty.default('127.0.0.1'),
  RESTATE_SERVICE_URL: url.optional(),
  RESTATE_IDENTITY_KEYS: z
    .string()
    .trim()
    .transform((value) =>
      value
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(/^publickeyv1_\w+$/, 'each must be a Restate public key (publickeyv1_…)')))
    .optional(),
  DB_SYNC: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['normal', 'full'], { error: 'must be normal or full' }))
    .default('normal'),
  STEPWISE_CONFIG: nonEmpty.default('./stepwise.config.json'),
  AUTH_TOKEN: z
    .string()
    .trim()
    .min(16, 'must be at least 16 characters')
    .regex(/^[A-Za-z0-9._~-]+$/, 'may hold only letters, digits and - . _ ~ (it travels in a WebSocket subprotocol)')
    .optional(),
  AUTH_MODE: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['none', 'token', 'oidc', 'header'], { error: 'must be none, token, oidc or header' }))
    .optional(),
  OIDC_ISSUER: url.optional(),
  OIDC_CLIENT_ID: nonEmpty.optional(),
  OIDC_CLIENT_SECRET: nonEmpty.optional(),
  OIDC_SCOPES: nonEmpty.default('openid profile email'),
  OIDC_ADMIN_EMAILS: list.optional(),
  OIDC_ADMIN_GROUP: nonEmpty.optional(),
  OIDC_GROUPS_CLAIM: nonEmpty.default('groups'),
  /** Signs the sign-in cookie: the same on every instance, so any instance accepts it. */
  SESSION_SECRET: z.string().trim().min(32, 'must be at least 32 characters').optional(),
  SESSION_MAX_AGE_HOURS: integer(1, 24 * 90).default(12),
  AUTH_HEADER: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9-]+$/, 'must be a header name, e.g. X-Forwarded-User')
    .optional(),
  AUTH_EMAIL_HEADER: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9-]+$/, 'must be a header name, e.g. X-Forwarded-Email')
    .optional(),
  TRUSTED_PROXIES: list
    .pipe(z.array(z.string().refine(validAddressOrRange, 'must be a comma-separated list of IP addresses or CIDR ranges, e.g. 10.0.0.5,172.16.0.0/12')))
    .optional(),
  /** Admins in header mode: user names or emails. */
  AUTH_ADMIN_USERS: list.optional(),
  MAX_RUNS_PER_USER: integer(1).optional(),
  MAX_MESSAGES_PER_SECOND_PER_USER: integer(1).optional(),
  REST_MAX_REQUESTS_PER_MINUTE: integer(1).default(1200),
  /** A token that opens GET /metrics alone (for a Prometheus scraper that must not hold AUTH_TOKEN). */
  METRICS_TOKEN: z.string().trim().min(16, 'must be at least 16 characters').optional(),
  ALLOWED_ORIGINS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ error: 'must be a comma-separated list of origins' })))
    .optional(),
  PUBLIC_ORIGIN: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) origin, e.g. https://chat.example.com' }))
    .optional(),
  ALLOWED_HOSTS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((host) => host.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(
      z.array(
        z.string().regex(/^(\*\.)?[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/, 'must be a comma-separated list of host names (no ports), e.g. chat.example.com,*.internal'),
      ),
    )
    .optional(),

  LLM_STREAMING: boolean.default(true),
  LLM_STREAM_USAGE: boolean.default(true),
  LLM_MAX_RETRIES: integer(0, 10).default(3),
  LLM_RETRY_BASE_MS: integer(0).default(500),
  LLM_TIMEOUT_MS: integer(1).default(120_000),
  LLM_STREAM_IDLE_TIMEOUT_MS: integer(1).default(60_000),
  LLM_TOTAL_TIMEOUT_MS: integer(1).default(10 * 60_000),
  LLM_MAX_OUTPUT_CHARS: integer(1000).default(200_000),
  LLM_MAX_OUTPUT_TOKENS: integer(16, 1_000_000).default(8192),
  LLM_STRUCTURED_OUTPUT: boolean.default(true),
  LLM_VISION: z.enum(['auto', 'true', 'false']).default('auto'),
  LLM_STRICT_ALTERNATION: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['auto', 'true', 'false', '1', '0', 'yes', 'no'], { error: 'must be auto, true or false' }))
    .default('auto'),
  LLM_TEMPERATURE: z.string().trim().transform(Number).pipe(z.number().min(0).max(2)).optional(),
  DEMO_DELAY_MS: integer(0, 10_000).default(20),
  PROMPTS_DIR: nonEmpty.optional(),
  MAX_FRAME_BYTES: integer(1024).default(1024 * 1024),
  TOOL_RESULT_MAX_CHARS: integer(100).default(16_000),
  TOOL_TIMEOUT_MS: integer(1).default(60_000),
  SESSION_IDLE_TTL_MS: integer(0).default(30 * 60_000),
  SESSION_UNUSED_TTL_MS: integer(0).default(5_000),
  RESUME_INTERRUPTED_RUNS: boolean.default(true),
  MAX_MESSAGES_PER_SECOND: integer(1).default(20),
  MAX_SOCKETS_PER_ADDRESS: integer(1).default(20),
  MAX_CONNECTIONS_PER_ADDRESS: integer(1).default(64),
  REQUEST_TIMEOUT_MS: integer(1).default(120_000),
  MAX_UPLOADS_PER_CLIENT: integer(1).default(16),
  EVENTS_BYTES_PER_MINUTE: integer(1024).default(64 * 1024 * 1024),
  MAX_CONCURRENT_RUNS: integer(1).default(100),
  MAX_RUNS_PER_ADDRESS: integer(1).optional(),
  SOCKET_MAX_BUFFERED_BYTES: integer(64 * 1024).default(8 * 1024 * 1024),
  SOCKET_SLOW_TIMEOUT_MS: integer(1).default(10_000),
  SOCKET_BATCH_MS: integer(0).default(10),
  CHAT_TIMEOUT_MS: integer(1).default(10 * 60_000),
  SHUTDOWN_TIMEOUT_MS: integer(1).default(5_000),
  SHUTDOWN_DRAIN_MS: integer(0).default(0),
  AGENT_RUN_TIMEOUT_MS: integer(1).default(15 * 60_000),
  AGENT_RUN_TOKEN_BUDGET: integer(0).default(0),
  AGENT_RUN_COST_BUDGET_USD: z
    .string()
    .trim()
    .transform(Number)
    .pipe(z.number({ error: 'must be a number of USD' }).positive('must be more than 0'))
    .optional(),
  INPUT_TIMEOUT_ACTION: z.enum(['park', 'stop']).default('park'),
  APPROVAL_TIMEOUT_ACTION: z.enum(['park', 'stop', 'deny']).default('park'),
  STEER_QUEUE_MAX: integer(1).default(10),
  STEER_MAX_CHARS: integer(1).default(STEER_MAX_CHARS_DEFAULT),
  NOTIFY_WEBHOOK_URL: url.optional(),
  NOTIFY_WEBHOOK_SECRET: z
    .string()
    .trim()
    .regex(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/, 'must be "whsec_" and a base64 key of at least 24 bytes (Standard Webhooks)')
    .optional(),
  NOTIFY_RETRY_BASE_MS: integer(10).default(5_000),
  VAPID_PUBLIC_KEY: nonEmpty.optional(),
  VAPID_PRIVATE_KEY: nonEmpty.optional(),
  VAPID_SUBJECT: z
    .string()
    .trim()
    .regex(/^(mailto:|https:\/\/)/, 'must be a mailto: address or an https: URL')
    .optional(),
  PUSH_SERVICE_HOSTS: list.optional(),
  CONTEXT_BUDGET_CHARS: integer(1000).default(60_000),
  FILE_MAX_BYTES: integer(1).default(10 * 1024 * 1024),
  SESSION_FILES_MAX: integer(1).default(500),
  PDF_MAX_PAGES: integer(1).default(1_000),
  IMAGE_MAX_PER_MESSAGE: integer(1).default(4),
  IMAGE_MAX_SIDE: integer(64).default(2_048),
  IMAGE_MAX_PIXELS: integer(1).default(40_000_000),
  MCP_STARTUP_WAIT_MS: integer(0).default(15_000),
  MCP_RETRY_BASE_MS: integer(1).default(1_000),
  MCP_RETRY_MAX_MS: integer(1).default(60_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  STATIC_DIR: nonEmpty.optional(),
  // OpenTelemetry: the SDK reads every OTEL_* variable itself; these only say whether it starts (as the SDK would export).
  OTEL_SDK_DISABLED: boolean.default(false),
  OTEL_TRACES_EXPORTER: z.string().trim().toLowerCase().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().trim().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().trim().optional(),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: boolean.default(false),
  TRACE_URL_TEMPLATE: z
    .string()
    .trim()
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }))
    .refine((url) => url.includes('%7Btrace_id%7D') || url.includes('{trace_id}'), 'must contain {trace_id}')
    .optional(),
});

/** OpenTelemetry tracing, when on: what spans may hold beyond what the SDK reads from OTEL_* itself. */
export interface TracingConfig {
  /** Prompts, replies and tool arguments on spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). */
  captureContent: boolean;
  /** INSTANCE_ID, when set: the resource's service.instance.id (else one per process). */
  instanceId: string | undefined;
}

/** The validated settings every module receives through injection. */
export interface Config {
  port: number;
  host: string;
  llm: {
    provider: 'openai' | 'azure' | 'demo';
    baseUrl: string | undefined;
    apiKey: string | undefined;
    /** The model every purpose without a route of its own uses (on Azure: the deployment). */
    model: string;
    /** LLM_PROVIDER=azure: the resource, its key, the default deployment and the API version. */
    azure: { endpoint: string; apiKey: string | undefined; deployment: string | undefined; apiVersion: string } | undefined;
    /** LLM_PARAMS: merged into every request's body; a route's own params are merged over them. */
    params: Record<string, unknown>;
    /** The config file's "models": the first route whose glob matches a call's purpose picks its model. */
    models: ModelRoute[];
    /** The config file's named model endpoints (routes and fallbacks name them). */
    endpoints: Record<string, ModelEndpoint>;
    /** The config file's "prices", over the built-in table (USD per million tokens). */
    prices: Record<string, ModelPrice>;
    /** HTTPS_PROXY / HTTP_PROXY / NO_PROXY for model requests and the health probe. */
    proxy: { httpsProxy: string | undefined; httpProxy: string | undefined; noProxy: string | undefined };
    streaming: boolean;
    /** Ask streamed replies for token usage (stream_options.include_usage). */
    streamUsage: boolean;
    maxRetries: number;
    retryBaseMs: number;
    /** Time to the response's headers (each attempt). */
    timeoutMs: number;
    /** Longest silence between two chunks of a streamed reply. */
    streamIdleTimeoutMs: number;
    /** Longest a whole call (every attempt, the streamed body included) may take. */
    totalTimeoutMs: number;
    /** Longest reply kept of one call: the stream is cut there and the request aborted. */
    maxOutputChars: number;
    /**
     * The max_tokens a reply cut at the model's output limit (finish_reason `length`) is asked for
     * again with; no other request sets it, so the endpoint's own default holds.
     */
    maxOutputTokens: number;
    /** Data answers as `response_format` json_schema (true), or asked for in the prompt (false). */
    structuredOutput: boolean;
    /**
     * LLM_VISION: whether the models can see images. `auto` knows vision models by name (see
     * model-routes.ts); a route's `vision` in the config file says it for its model.
     */
    vision: 'auto' | boolean;
    /**
     * Every request made to alternate strictly (see llm/alternation.ts): set, or by default for
     * the endpoints known to need it.
     */
    strictAlternation: boolean;
    temperature: number | undefined;
    demoDelayMs: number;
  };
  agent: {
    maxStepsDefault: number;
    maxStepsLimit: number;
    inputTimeoutMs: number;
    /** A run's wall-clock budget. */
    runTimeoutMs: number;
    /** A run's token budget (prompt + completion, as the model reports them); 0: none. */
    runTokenBudget: number;
    /** A run's default cost budget in USD (a chat's `max_cost_usd` overrides it); undefined: none. */
    runCostBudgetUsd: number | undefined;
    /** What a question nobody answered in time does: park the run until someone does, or stop it. */
    inputTimeoutAction: 'park' | 'stop';
    /** What an approval nobody answered in time does: park the run, stop it, or deny the call (the run goes on). */
    approvalTimeoutAction: 'park' | 'stop' | 'deny';
    /** The config file's "approval" rules: tool name or glob → auto / ask / deny, first match wins. */
    approval: ApprovalRule[];
    /** How much earlier conversation (in characters) goes to the model; oldest turns go first. */
    contextBudgetChars: number;
    /** How many messages sent during runs may wait in one chat (steers and queued messages). */
    steerQueueMax: number;
    /** The longest message a person may send to a running run, in characters. */
    steerMaxChars: number;
  };
  limits: {
    messagesPerSecond: number;
    socketsPerAddress: number;
    concurrentRuns: number;
    /** One client address's share of the concurrent runs. */
    runsPerAddress: number;
    /** A socket whose unsent bytes stay above this for `slowSocketTimeoutMs` is closed (1013). */
    socketMaxBufferedBytes: number;
    slowSocketTimeoutMs: number;
    /** A run's progress goes out to a client at most once per this many milliseconds while it comes faster (0: each turn's at once). */
    socketBatchMs: number;
    /** A plain chat answer's wall-clock budget. */
    chatTimeoutMs: number;
    /** TCP connections one address may hold open (any kind); `trustedProxies` are not capped. */
    connectionsPerAddress: number;
    /**
     * TRUSTED_PROXIES (in any mode): they carry everyone's connections, so no per-address limit is
     * theirs; a request through them counts against the address they forward (X-Forwarded-For).
     */
    trustedProxies: string[];
    /** The longest a request (its headers and whole body) may take to arrive; then 408 and the connection closes. */
    requestTimeoutMs: number;
    /** Uploads one client (user or address) may have going at once. */
    uploadsPerClient: number;
    /** Bytes of chat event logs one client (user or address) may read a minute through the events API. */
    eventsBytesPerMinute: number;
  };
  /** The prompts folder: one subfolder per strategy (and `chat`), one .md template per purpose. */
  prompts: { dir: string };
  tools: { resultMaxChars: number; timeoutMs: number };
  /** Session files: the largest upload or written file, and how many files one session may hold. */
  files: { maxBytes: number; maxPerSession: number; pdfMaxPages: number };
  /**
   * Images sent to a vision model: at most `maxPerMessage` a message; a side longer than `maxSide`
   * pixels is scaled down on the server before it is sent; an image of more than `maxPixels` is
   * refused at upload (it is not decoded).
   */
  images: { maxPerMessage: number; maxSide: number; maxPixels: number };
  /** MCP servers from the config file, and how patiently they are (re)connected. */
  mcp: {
    servers: Record<string, McpServerConfig>;
    /** How long startup waits for the servers before listening anyway (they keep connecting). */
    startupWaitMs: number;
    retryBaseMs: number;
    retryMaxMs: number;
  };
  transport: { maxFrameBytes: number; staticDir: string | undefined };
  /** Who the users are (AUTH_MODE) and how each is recognised; see auth/. */
  auth: AuthConfig;
  /** Per-user quotas (multi-user modes; per address when nobody signs in). */
  quotas: { runsPerUser: number | undefined; messagesPerSecondPerUser: number; restPerMinute: number };
  access: {
    authToken: string | undefined;
    metricsToken: string | undefined;
    allowedOrigins: string[] | undefined;
    /** The origin users reach the server at (behind a proxy), e.g. https://chat.example.com. */
    publicOrigin: string | undefined;
    /** Host names (beyond loopback names and IP addresses) the server answers to; `*.` for subdomains. */
    allowedHosts: string[];
  };
  dataDir: string;
  /** A PostgreSQL server to use instead of the embedded database. */
  databaseUrl: string | undefined;
  /** Several instances (REDIS_URL with DATABASE_URL): where they meet, this one's id, how long a lease lasts. */
  cluster: { redisUrl: string; databaseUrl: string; instanceId: string | undefined; leaseMs: number } | undefined;
  /**
   * RUN_ENGINE=restate: runs execute as Restate workflows served by this process on `servicePort`
   * (registered with Restate at `serviceUrl`); absent for the in-process engine.
   */
  restate:
    | {
        ingressUrl: string;
        adminUrl: string;
        servicePort: number;
        serviceHost: string;
        serviceUrl: string;
        /** Restate's public keys: requests to the workflow endpoint must be signed with one of them. */
        identityKeys: string[];
      }
    | undefined;
  /**
   * How the embedded SQLite database syncs its write-ahead log: `full` fsyncs at every commit (an
   * acknowledged write survives a power cut); `normal` only at checkpoints (it survives a crash of
   * the process, not of the machine) and commits several times faster.
   */
  dbSync: 'normal' | 'full';
  configFile: string;
  /** True when STEPWISE_CONFIG was set: then a missing file is an error, not "no file". */
  configFileExplicit: boolean;
  sessionIdleTtlMs: number;
  /** How long a session nobody wrote in stays in memory once its last socket has left (at most sessionIdleTtlMs). */
  sessionUnusedTtlMs: number;
  /** After a restart, runs it interrupted go on from their journal (false: they are closed). */
  resumeInterruptedRuns: boolean;
  /** How long a SIGTERM may take to stop runs and close everything before the process exits anyway. */
  shutdownTimeoutMs: number;
  /**
   * How long, after SIGTERM, the server goes on serving with its readiness probe failing before its
   * runs are handed over or stopped, so that a load balancer stops sending it work first.
   */
  shutdownDrainMs: number;
  /** Where the app is reached from outside (PUBLIC_ORIGIN, else HOST and PORT): links in notifications start with it. */
  publicUrl: string;
  /** Notifications: a webhook, and how soon a failed delivery is tried again (doubling from there). */
  notify: {
    webhook: { url: string; secret: string } | undefined;
    retryBaseMs: number;
    /** Web Push: the server's key pair when VAPID_* gives it (else made and kept in the store), and its contact. */
    vapid: { publicKey: string | undefined; privateKey: string | undefined; subject: string | undefined };
    /** Hosts a browser's push subscription may point at (`*.` for any subdomain); PUSH_SERVICE_HOSTS. */
    pushServiceHosts: string[];
  };
  logLevel: string;
  /** OpenTelemetry tracing; undefined when off. */
  tracing: TracingConfig | undefined;
  /** A link to a run's trace, `{trace_id}` in it (TRACE_URL_TEMPLATE). */
  traceUrlTemplate: string | undefined;
  /** The environment variables that were set: they pin their settings, which the app then cannot change. */
  setVariables?: readonly string[];
}

/** AUTH_MODE and what each mode needs. */
export type AuthConfig =
  | { mode: 'none' }
  | { mode: 'token' }
  | {
      mode: 'oidc';
      issuer: string;
      clientId: string;
      clientSecret: string | undefined;
      scopes: string;
      adminEmails: string[];
      adminGroup: string | undefined;
      groupsClaim: string;
      /** Where the provider sends the browser back: PUBLIC_ORIGIN/auth/callback. */
      redirectUri: string;
      sessionSecret: string;
      sessionMaxAgeMs: number;
    }
  | {
      mode: 'header';
      header: string;
      emailHeader: string | undefined;
      trustedProxies: string[];
      /** AUTH_ADMIN_USERS without an @: user names, matched exactly. */
      adminNames: string[];
      /** AUTH_ADMIN_USERS with an @: emails, matched without case against the email header. */
      adminEmails: string[];
    };

/** The OTEL_* variables the OpenTelemetry SDK reads itself (beyond those above), as documented. */
const OTEL_SDK_VARIABLES = [
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_PROPAGATORS',
  'OTEL_BSP_SCHEDULE_DELAY',
  'OTEL_METRICS_EXPORTER',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  'OTEL_METRIC_EXPORT_INTERVAL',
];

/** Every environment variable the server reads, by name (the OpenTelemetry SDK's among them). */
export const ENVIRONMENT_VARIABLES: readonly string[] = [...Object.keys(EnvSchema.shape), ...OTEL_SDK_VARIABLES];

/** Reads and validates the settings; throws one ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined>, defaults: { promptsDir: string }): Config {
  // An empty variable means "not set", as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.keys(EnvSchema.shape).flatMap((key) => (env[key] ? [[key, env[key]]] : [])));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    const secret = /KEY|TOKEN|SECRET|DATABASE_URL|REDIS_URL|PROXY/i.test(name);
    const shown = present[name] === undefined || secret ? '' : ` (got "${present[name]}")`;
    throw new ConfigError(`Invalid ${name}: ${issue.message}${shown}`);
  }
  const e = parsed.data;
  if (present.AGENT_MAX_STEPS !== undefined && e.AGENT_MAX_STEPS > e.AGENT_MAX_STEPS_LIMIT) {
    throw new ConfigError(`Invalid AGENT_MAX_STEPS: ${e.AGENT_MAX_STEPS} is above AGENT_MAX_STEPS_LIMIT (${e.AGENT_MAX_STEPS_LIMIT})`);
  }
  if (e.REDIS_URL && !e.DATABASE_URL) {
    throw new ConfigError('Invalid REDIS_URL: several instances share PostgreSQL too; set DATABASE_URL as well');
  }
  if (e.RUN_ENGINE === 'restate' && (!e.RESTATE_INGRESS_URL || !e.RESTATE_ADMIN_URL)) {
    throw new ConfigError(
      `Invalid RUN_ENGINE: restate needs RESTATE_INGRESS_URL and RESTATE_ADMIN_URL (missing: ${[e.RESTATE_INGRESS_URL ? '' : 'RESTATE_INGRESS_URL', e.RESTATE_ADMIN_URL ? '' : 'RESTATE_ADMIN_URL'].filter(Boolean).join(', ')})`,
    );
  }
  const auth = authConfig(e);
  const provider = e.LLM_PROVIDER ?? (e.AZURE_OPENAI_ENDPOINT ? 'azure' : e.OPENAI_API_KEY || e.OPENAI_BASE_URL ? 'openai' : 'demo');
  if (provider === 'azure' && (!e.AZURE_OPENAI_ENDPOINT || !e.OPENAI_API_VERSION)) {
    throw new ConfigError(
      `Invalid LLM_PROVIDER: azure needs AZURE_OPENAI_ENDPOINT and OPENAI_API_VERSION (missing: ${[e.AZURE_OPENAI_ENDPOINT ? '' : 'AZURE_OPENAI_ENDPOINT', e.OPENAI_API_VERSION ? '' : 'OPENAI_API_VERSION'].filter(Boolean).join(', ')})`,
    );
  }
  const azure =
    provider === 'azure' && e.AZURE_OPENAI_ENDPOINT && e.OPENAI_API_VERSION
      ? { endpoint: e.AZURE_OPENAI_ENDPOINT, apiKey: e.AZURE_OPENAI_API_KEY, deployment: e.AZURE_OPENAI_DEPLOYMENT, apiVersion: e.OPENAI_API_VERSION }
      : undefined;
  return {
    port: e.PORT,
    host: e.HOST,
    llm: {
      provider,
      baseUrl: e.OPENAI_BASE_URL,
      apiKey: e.OPENAI_API_KEY,
      // On Azure the model is a deployment: AZURE_OPENAI_DEPLOYMENT unless LLM_MODEL is set.
      model: azure?.deployment && present.LLM_MODEL === undefined ? azure.deployment : e.LLM_MODEL,
      azure,
      params: e.LLM_PARAMS ?? {},
      models: [],
      endpoints: {},
      prices: {},
      proxy: {
        httpsProxy: e.HTTPS_PROXY ?? e.https_proxy,
        httpProxy: e.HTTP_PROXY ?? e.http_proxy,
        noProxy: e.NO_PROXY ?? e.no_proxy,
      },
      streaming: e.LLM_STREAMING,
      streamUsage: e.LLM_STREAM_USAGE,
      maxRetries: e.LLM_MAX_RETRIES,
      retryBaseMs: e.LLM_RETRY_BASE_MS,
      timeoutMs: e.LLM_TIMEOUT_MS,
      streamIdleTimeoutMs: e.LLM_STREAM_IDLE_TIMEOUT_MS,
      totalTimeoutMs: e.LLM_TOTAL_TIMEOUT_MS,
      maxOutputChars: e.LLM_MAX_OUTPUT_CHARS,
      maxOutputTokens: e.LLM_MAX_OUTPUT_TOKENS,
      structuredOutput: e.LLM_STRUCTURED_OUTPUT,
      vision: e.LLM_VISION === 'auto' ? 'auto' : e.LLM_VISION === 'true',
      strictAlternation:
        e.LLM_STRICT_ALTERNATION === 'auto'
          ? needsStrictAlternation(e.OPENAI_BASE_URL ?? '', e.LLM_MODEL)
          : ['true', '1', 'yes'].includes(e.LLM_STRICT_ALTERNATION),
      temperature: e.LLM_TEMPERATURE,
      demoDelayMs: e.DEMO_DELAY_MS,
    },
    agent: {
      // The built-in default yields to a lower limit; an explicit default above it is an error (above).
      maxStepsDefault: Math.min(e.AGENT_MAX_STEPS, e.AGENT_MAX_STEPS_LIMIT),
      maxStepsLimit: e.AGENT_MAX_STEPS_LIMIT,
      inputTimeoutMs: e.AGENT_INPUT_TIMEOUT_MS,
      runTimeoutMs: e.AGENT_RUN_TIMEOUT_MS,
      runTokenBudget: e.AGENT_RUN_TOKEN_BUDGET,
      runCostBudgetUsd: e.AGENT_RUN_COST_BUDGET_USD,
      inputTimeoutAction: e.INPUT_TIMEOUT_ACTION,
      approvalTimeoutAction: e.APPROVAL_TIMEOUT_ACTION,
      approval: [],
      contextBudgetChars: e.CONTEXT_BUDGET_CHARS,
      steerQueueMax: e.STEER_QUEUE_MAX,
      steerMaxChars: e.STEER_MAX_CHARS,
    },
    limits: {
      messagesPerSecond: e.MAX_MESSAGES_PER_SECOND,
      socketsPerAddress: e.MAX_SOCKETS_PER_ADDRESS,
      concurrentRuns: e.MAX_CONCURRENT_RUNS,
      // By default one address may take a quarter of the slots (at least one), so nobody takes all.
      runsPerAddress: Math.min(e.MAX_CONCURRENT_RUNS, e.MAX_RUNS_PER_ADDRESS ?? Math.max(1, Math.ceil(e.MAX_CONCURRENT_RUNS / 4))),
      socketMaxBufferedBytes: e.SOCKET_MAX_BUFFERED_BYTES,
      slowSocketTimeoutMs: e.SOCKET_SLOW_TIMEOUT_MS,
      socketBatchMs: e.SOCKET_BATCH_MS,
      chatTimeoutMs: e.CHAT_TIMEOUT_MS,
      connectionsPerAddress: e.MAX_CONNECTIONS_PER_ADDRESS,
      trustedProxies: e.TRUSTED_PROXIES ?? [],
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      uploadsPerClient: e.MAX_UPLOADS_PER_CLIENT,
      eventsBytesPerMinute: e.EVENTS_BYTES_PER_MINUTE,
    },
    prompts: { dir: e.PROMPTS_DIR ?? defaults.promptsDir },
    tools: { resultMaxChars: e.TOOL_RESULT_MAX_CHARS, timeoutMs: e.TOOL_TIMEOUT_MS },
    files: { maxBytes: e.FILE_MAX_BYTES, maxPerSession: e.SESSION_FILES_MAX, pdfMaxPages: e.PDF_MAX_PAGES },
    images: { maxPerMessage: e.IMAGE_MAX_PER_MESSAGE, maxSide: e.IMAGE_MAX_SIDE, maxPixels: e.IMAGE_MAX_PIXELS },
    mcp: {
      servers: {},
      startupWaitMs: e.MCP_STARTUP_WAIT_MS,
      retryBaseMs: e.MCP_RETRY_BASE_MS,
      retryMaxMs: Math.max(e.MCP_RETRY_MAX_MS, e.MCP_RETRY_BASE_MS),
    },
    transport: { maxFrameBytes: e.MAX_FRAME_BYTES, staticDir: e.STATIC_DIR },
    auth,
    quotas: {
      runsPerUser: e.MAX_RUNS_PER_USER,
      messagesPerSecondPerUser: e.MAX_MESSAGES_PER_SECOND_PER_USER ?? 2 * e.MAX_MESSAGES_PER_SECOND,
      restPerMinute: e.REST_MAX_REQUESTS_PER_MINUTE,
    },
    access: {
      authToken: e.AUTH_TOKEN,
      metricsToken: e.METRICS_TOKEN,
      allowedOrigins: e.ALLOWED_ORIGINS,
      publicOrigin: e.PUBLIC_ORIGIN === undefined ? undefined : new URL(e.PUBLIC_ORIGIN).origin,
      allowedHosts: e.ALLOWED_HOSTS ?? [],
    },
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    cluster:
      e.REDIS_URL && e.DATABASE_URL
        ? { redisUrl: e.REDIS_URL, databaseUrl: e.DATABASE_URL, instanceId: e.INSTANCE_ID, leaseMs: e.CLUSTER_LEASE_MS }
        : undefined,
    restate:
      e.RUN_ENGINE === 'restate' && e.RESTATE_INGRESS_URL && e.RESTATE_ADMIN_URL
        ? {
            ingressUrl: e.RESTATE_INGRESS_URL.replace(/\/+$/, ''),
            adminUrl: e.RESTATE_ADMIN_URL.replace(/\/+$/, ''),
            servicePort: e.RESTATE_SERVICE_PORT,
            serviceHost: e.RESTATE_SERVICE_HOST,
            serviceUrl: (
              e.RESTATE_SERVICE_URL ??
              `http://${e.RESTATE_SERVICE_HOST.includes(':') ? `[${e.RESTATE_SERVICE_HOST}]` : e.RESTATE_SERVICE_HOST}:${e.RESTATE_SERVICE_PORT}`
            ).replace(/\/+$/, ''),
            identityKeys: e.RESTATE_IDENTITY_KEYS ?? [],
          }
        : undefined,
    dbSync: e.DB_SYNC,
    configFile: e.STEPWISE_CONFIG,
    configFileExplicit: present.STEPWISE_CONFIG !== undefined,
    sessionIdleTtlMs: e.SESSION_IDLE_TTL_MS,
    sessionUnusedTtlMs: e.SESSION_UNUSED_TTL_MS,
    resumeInterruptedRuns: e.RESUME_INTERRUPTED_RUNS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    logLevel: e.LOG_LEVEL,
    tracing: tracingConfig(e),
    traceUrlTemplate: e.TRACE_URL_TEMPLATE?.replaceAll('%7Btrace_id%7D', '{trace_id}'),
    setVariables: Object.keys(present),
    publicUrl: e.PUBLIC_ORIGIN === undefined ? `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}` : new URL(e.PUBLIC_ORIGIN).origin,
    notify: notifyConfig(e),
  };
}

/** The push services of the browsers people use (Chrome, Firefox, Edge, Safari); a subscription elsewhere is refused. */
const DEFAULT_PUSH_SERVICE_HOSTS = ['fcm.googleapis.com', '*.push.services.mozilla.com', '*.notify.windows.com', '*.push.apple.com'];

/** Where notifications go: a webhook (NOTIFY_WEBHOOK_URL, signed with NOTIFY_WEBHOOK_SECRET). */
function notifyConfig(e: z.infer<typeof EnvSchema>): Config['notify'] {
  if (e.NOTIFY_WEBHOOK_URL && !e.NOTIFY_WEBHOOK_SECRET) {
    throw new ConfigError('Invalid NOTIFY_WEBHOOK_URL: webhooks are signed; set NOTIFY_WEBHOOK_SECRET as well (whsec_ and a base64 key)');
  }
  const webhook = e.NOTIFY_WEBHOOK_URL && e.NOTIFY_WEBHOOK_SECRET ? { url: e.NOTIFY_WEBHOOK_URL, secret: e.NOTIFY_WEBHOOK_SECRET } : undefined;
  if (Boolean(e.VAPID_PUBLIC_KEY) !== Boolean(e.VAPID_PRIVATE_KEY)) {
    throw new ConfigError('Invalid VAPID_PUBLIC_KEY: set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY together (or neither: the server makes a pair and keeps it)');
  }
  return {
    webhook,
    retryBaseMs: e.NOTIFY_RETRY_BASE_MS,
    vapid: { publicKey: e.VAPID_PUBLIC_KEY, privateKey: e.VAPID_PRIVATE_KEY, subject: e.VAPID_SUBJECT },
    pushServiceHosts: e.PUSH_SERVICE_HOSTS ?? DEFAULT_PUSH_SERVICE_HOSTS,
  };
}

/** AUTH_MODE (token when AUTH_TOKEN is set, none otherwise) and the settings its mode needs. */
function authConfig(e: z.infer<typeof EnvSchema>): AuthConfig {
  const mode = e.AUTH_MODE ?? (e.AUTH_TOKEN ? 'token' : 'none');
  const missing = (names: [string, unknown][]) => names.filter(([, value]) => !value).map(([name]) => name);
  switch (mode) {
    case 'none':
      if (e.AUTH_TOKEN) throw new ConfigError('Invalid AUTH_MODE: none, yet AUTH_TOKEN is set; use AUTH_MODE=token or unset AUTH_TOKEN');
      return { mode };
    case 'token':
      if (!e.AUTH_TOKEN) throw new ConfigError('Invalid AUTH_MODE: token needs AUTH_TOKEN');
      return { mode };
    case 'oidc': {
      const absent = missing([
        ['OIDC_ISSUER', e.OIDC_ISSUER],
        ['OIDC_CLIENT_ID', e.OIDC_CLIENT_ID],
        ['PUBLIC_ORIGIN', e.PUBLIC_ORIGIN],
        ['SESSION_SECRET', e.SESSION_SECRET],
      ]);
      if (absent.length > 0) throw new ConfigError(`Invalid AUTH_MODE: oidc needs ${absent.join(', ')}`);
      // Over plain http anyone on the path could answer for the provider; only this machine is trusted so.
      const issuer = new URL(e.OIDC_ISSUER!);
      if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopbackHostName(issuer.hostname)))
        throw new ConfigError('Invalid OIDC_ISSUER: must be an https URL (plain http only for a provider on this machine: localhost, 127.0.0.1, [::1])');
      return {
        mode,
        issuer: e.OIDC_ISSUER!,
        clientId: e.OIDC_CLIENT_ID!,
        clientSecret: e.OIDC_CLIENT_SECRET,
        scopes: e.OIDC_SCOPES,
        adminEmails: (e.OIDC_ADMIN_EMAILS ?? []).map((email) => email.toLowerCase()),
        adminGroup: e.OIDC_ADMIN_GROUP,
        groupsClaim: e.OIDC_GROUPS_CLAIM,
        redirectUri: `${new URL(e.PUBLIC_ORIGIN!).origin}/auth/callback`,
        sessionSecret: e.SESSION_SECRET!,
        sessionMaxAgeMs: e.SESSION_MAX_AGE_HOURS * 3_600_000,
      };
    }
    case 'header': {
      const absent = missing([
        ['AUTH_HEADER', e.AUTH_HEADER],
        ['TRUSTED_PROXIES', e.TRUSTED_PROXIES?.length],
      ]);
      if (absent.length > 0) throw new ConfigError(`Invalid AUTH_MODE: header needs ${absent.join(', ')} (the header is believed only from those addresses)`);
      return {
        mode,
        header: e.AUTH_HEADER!,
        emailHeader: e.AUTH_EMAIL_HEADER,
        trustedProxies: e.TRUSTED_PROXIES!,
        // An entry with an @ is an email (compared without case); any other is a user name, compared exactly, as ids are.
        adminNames: (e.AUTH_ADMIN_USERS ?? []).filter((entry) => !entry.includes('@')),
        adminEmails: (e.AUTH_ADMIN_USERS ?? []).filter((entry) => entry.includes('@')).map((email) => email.toLowerCase()),
      };
    }
  }
}

/**
 * Why the server must not start as configured: listening beyond loopback (HOST=0.0.0.0 in a
 * container, a LAN address) with nobody signing in would leave every client but this machine's
 * refused, which is never what the operator meant; undefined when it may start.
 */
export function exposureProblem(config: Pick<Config, 'host' | 'auth'>): string | undefined {
  // An IPv6 address is written bare in HOST (::1) and in brackets in a URL's host name ([::1]).
  const name = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host;
  if (config.auth.mode !== 'none' || isLoopbackHostName(name)) return undefined;
  return `HOST=${config.host} listens beyond this machine, but nobody signs in (AUTH_MODE=none). Set AUTH_TOKEN (a shared token, at least 16 characters), or AUTH_MODE=oidc or header to have people sign in, or HOST=127.0.0.1 to keep it to this machine.`;
}

/** Whether a URL's host name is this machine: localhost (and names under it), 127.0.0.0/8, ::1. */
function isLoopbackHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(name) || name === '[::1]';
}

/**
 * Tracing is on when OTEL_TRACES_EXPORTER names an exporter, or (unset) an OTLP endpoint is given,
 * and OTEL_SDK_DISABLED is not true. Everything else (exporter, protocol, endpoint, headers,
 * resource, sampler, propagators, batching, metrics) the OpenTelemetry SDK reads itself.
 */
function tracingConfig(e: z.infer<typeof EnvSchema>): TracingConfig | undefined {
  const exporters = e.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim()) ?? [];
  const on = e.OTEL_TRACES_EXPORTER ? exporters[0] !== 'none' : Boolean(e.OTEL_EXPORTER_OTLP_ENDPOINT || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (!on || e.OTEL_SDK_DISABLED) return undefined;
  return { captureContent: e.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, instanceId: e.INSTANCE_ID };
}

/**
 * Endpoints known to refuse a conversation that does not alternate strictly: Anthropic's
 * compatible endpoint, and Mistral and Gemma models (their chat templates, as llama.cpp and vLLM
 * apply them, reject two turns of one role in a row).
 */
export function needsStrictAlternation(baseUrl: string, model: string): boolean {
  let host = '';
  try {
    host = new URL(baseUrl).hostname;
  } catch {
    // No URL (the default endpoint) or one the schema refuses anyway: nothing to recognise.
  }
  return host === 'api.anthropic.com' || /mistral|mixtral|gemma/i.test(model);
}
