import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import type { ModelEndpoint, ModelPrice, ModelRoute } from '../config-file.ts';
import { boolean, integer, nonEmpty, section, unset, url } from '../env-values.ts';

const LlmProvider = z.enum(['openai', 'azure', 'demo']);

/** The model when LLM_MODEL names none (on Azure, AZURE_OPENAI_DEPLOYMENT does first). */
const DEFAULT_MODEL = 'gpt-4o-mini';

/** The model endpoint, how it is called, and how patiently. */
export const modelSection = section(
  z.object({
    LLM_PROVIDER: LlmProvider.optional(),
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
    LLM_MODEL: nonEmpty.optional(),
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
  }),
  (env) => {
    const provider: z.output<typeof LlmProvider> =
      env.LLM_PROVIDER ?? (env.AZURE_OPENAI_ENDPOINT ? 'azure' : env.OPENAI_API_KEY || env.OPENAI_BASE_URL ? 'openai' : 'demo');
    const missing = unset([
      ['AZURE_OPENAI_ENDPOINT', env.AZURE_OPENAI_ENDPOINT],
      ['OPENAI_API_VERSION', env.OPENAI_API_VERSION],
    ]);
    if (provider === 'azure' && missing.length > 0) {
      throw new ConfigError(`Invalid LLM_PROVIDER: azure needs AZURE_OPENAI_ENDPOINT and OPENAI_API_VERSION (missing: ${missing.join(', ')})`);
    }
    const azure =
      provider === 'azure' && env.AZURE_OPENAI_ENDPOINT && env.OPENAI_API_VERSION
        ? { endpoint: env.AZURE_OPENAI_ENDPOINT, apiKey: env.AZURE_OPENAI_API_KEY, deployment: env.AZURE_OPENAI_DEPLOYMENT, apiVersion: env.OPENAI_API_VERSION }
        : undefined;
    const model = env.LLM_MODEL ?? DEFAULT_MODEL;
    // The config file (config-file.ts) is read after the environment; its routes, endpoints and prices are put in here.
    const models: ModelRoute[] = [];
    const endpoints: Record<string, ModelEndpoint> = {};
    const prices: Record<string, ModelPrice> = {};
    return {
      llm: {
        provider,
        baseUrl: env.OPENAI_BASE_URL,
        apiKey: env.OPENAI_API_KEY,
        /** The model every purpose without a route of its own uses (on Azure: the deployment, unless LLM_MODEL is set). */
        model: azure?.deployment && env.LLM_MODEL === undefined ? azure.deployment : model,
        /** LLM_PROVIDER=azure: the resource, its key, the default deployment and the API version. */
        azure,
        /** LLM_PARAMS: merged into every request's body; a route's own params are merged over them. */
        params: env.LLM_PARAMS ?? {},
        /** The config file's "models": the first route whose glob matches a call's purpose picks its model. */
        models,
        /** The config file's named model endpoints (routes and fallbacks name them). */
        endpoints,
        /** The config file's "prices", over the built-in table (USD per million tokens). */
        prices,
        /** HTTPS_PROXY / HTTP_PROXY / NO_PROXY for model requests and the health probe. */
        proxy: {
          httpsProxy: env.HTTPS_PROXY ?? env.https_proxy,
          httpProxy: env.HTTP_PROXY ?? env.http_proxy,
          noProxy: env.NO_PROXY ?? env.no_proxy,
        },
        streaming: env.LLM_STREAMING,
        /** Ask streamed replies for token usage (stream_options.include_usage). */
        streamUsage: env.LLM_STREAM_USAGE,
        maxRetries: env.LLM_MAX_RETRIES,
        retryBaseMs: env.LLM_RETRY_BASE_MS,
        /** Time to the response's headers (each attempt). */
        timeoutMs: env.LLM_TIMEOUT_MS,
        /** Longest silence between two chunks of a streamed reply. */
        streamIdleTimeoutMs: env.LLM_STREAM_IDLE_TIMEOUT_MS,
        /** Longest a whole call (every attempt, the streamed body included) may take. */
        totalTimeoutMs: env.LLM_TOTAL_TIMEOUT_MS,
        /** Longest reply kept of one call: the stream is cut there and the request aborted. */
        maxOutputChars: env.LLM_MAX_OUTPUT_CHARS,
        /**
         * The max_tokens a reply cut at the model's output limit (finish_reason `length`) is asked for
         * again with; no other request sets it, so the endpoint's own default holds.
         */
        maxOutputTokens: env.LLM_MAX_OUTPUT_TOKENS,
        /** Data answers as `response_format` json_schema (true), or asked for in the prompt (false). */
        structuredOutput: env.LLM_STRUCTURED_OUTPUT,
        /**
         * LLM_VISION: whether the models can see images. `auto` knows vision models by name (see
         * model-routes.ts); a route's `vision` in the config file says it for its model.
         */
        vision: env.LLM_VISION === 'auto' ? ('auto' as const) : env.LLM_VISION === 'true',
        /**
         * Every request made to alternate strictly (see llm/alternation.ts): set, or by default for
         * the endpoints known to need it.
         */
        strictAlternation:
          env.LLM_STRICT_ALTERNATION === 'auto'
            ? needsStrictAlternation(env.OPENAI_BASE_URL ?? '', model)
            : ['true', '1', 'yes'].includes(env.LLM_STRICT_ALTERNATION),
        temperature: env.LLM_TEMPERATURE,
        demoDelayMs: env.DEMO_DELAY_MS,
      },
    };
  },
);

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
