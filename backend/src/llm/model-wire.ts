import OpenAI, { AzureOpenAI } from 'openai';
import { Agent, type Dispatcher, EnvHttpProxyAgent } from 'undici';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import { type BodyLimits, BoundedBody } from './bounded-body.ts';

export { seconds } from './bounded-body.ts';

/**
 * How long an idle connection to the model endpoint is kept for the next call. A server that
 * announces a shorter keep-alive in its response headers is believed.
 */
const IDLE_CONNECTION_MS = 4_000;

/**
 * The openai SDK's client for the configured endpoint: OpenAI or any compatible server, or Azure
 * OpenAI (LLM_PROVIDER=azure: `/openai/deployments/MODEL/…?api-version=…` with an `api-key`
 * header, the model of each call naming its deployment). Its requests go through undici's fetch
 * on one keep-alive pool, or through HTTPS_PROXY / HTTP_PROXY (NO_PROXY honoured), with the body
 * bounded by `limits` (see guardedFetch). The SDK builds requests, authenticates, retries
 * (retry-after, x-should-retry) and throws its typed errors; LLM_TIMEOUT_MS is its wait for
 * response headers.
 */
export function createModelWire(
  config: Config,
  logger: Logger,
  limits: BodyLimits,
  overrides: { maxRetries?: number; timeoutMs?: number } = {},
): { client: OpenAI; dispatcher: Dispatcher } {
  const { llm } = config;
  const dispatcher = dispatcherFor(llm.proxy);
  const options = {
    maxRetries: overrides.maxRetries ?? llm.maxRetries,
    timeout: overrides.timeoutMs ?? llm.timeoutMs,
    fetch: guardedFetch(dispatcher, limits),
    // The SDK's own log lines (retries, a stream it could not parse) join the server's, quietly.
    logLevel: 'warn' as const,
    logger: sdkLogger(logger),
  };
  const client = llm.azure
    ? new AzureOpenAI({ ...options, endpoint: llm.azure.endpoint, apiKey: llm.azure.apiKey ?? 'no-key', apiVersion: llm.azure.apiVersion })
    : // Local servers need no key; sending a placeholder keeps servers that expect the header content.
      new OpenAI({ ...options, baseURL: llm.baseUrl ?? 'https://api.openai.com/v1', apiKey: llm.apiKey ?? 'no-key', organization: null, project: null });
  return { client, dispatcher };
}

/** The base URL requests go to, fit to show: without user, password, query or fragment. */
export function endpointOf(config: Config): string {
  if (config.llm.azure) return safeEndpoint(config.llm.azure.endpoint);
  return safeEndpoint(config.llm.baseUrl ?? 'https://api.openai.com/v1');
}

/** A URL fit to show: without user, password, query or fragment. */
export function safeEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'the configured endpoint';
  }
}

/** One pool for the process: a keep-alive agent, or the proxy agent when a proxy is set. */
function dispatcherFor(proxy: Config['llm']['proxy']): Dispatcher {
  // Our own clocks (LLM_TIMEOUT_MS through the SDK, the idle clock here) replace undici's.
  const agentOptions = { keepAliveTimeout: IDLE_CONNECTION_MS, headersTimeout: 0, bodyTimeout: 0 };
  if (!proxy.httpsProxy && !proxy.httpProxy) return new Agent(agentOptions);
  // Empty strings, not undefined: the settings are the config's, never read again behind its back.
  return new EnvHttpProxyAgent({ ...agentOptions, httpProxy: proxy.httpProxy ?? '', httpsProxy: proxy.httpsProxy ?? '', noProxy: proxy.noProxy ?? '' });
}

/**
 * The SDK's fetch, made on undici's `request()` over `dispatcher`: the request goes out as the SDK
 * built it and the response comes back as the little the SDK reads of one (status, headers,
 * `text()`, and a body it iterates), with no web streams, no copy of the request and no
 * DOMException when the SDK lets go of a body it has read to its end. Redirects are not followed:
 * the SDK reports a 3xx with the address it points to. Replies are asked for uncompressed, so the
 * size limits count what the endpoint sends. Every response body is bounded by `limits` (see
 * BoundedBody).
 */
export function guardedFetch(dispatcher: Dispatcher, limits: BodyLimits): typeof fetch {
  const guarded = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const { body } = init;
    if (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new TypeError('The model wire sends only JSON bodies');
    }
    if (url.username || url.password) throw new TypeError('The model endpoint URL must not hold a user or password');
    const response = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: { 'accept-encoding': 'identity', ...headerRecord(init.headers) },
      body: body ?? null,
      signal: init.signal ?? null,
    });
    const wire = new WireResponse(url.href, response, limits, init.signal ?? undefined);
    if (wire.status < 500) return wire as unknown as Response;
    return (await withRetryVerdict(wire, body ?? undefined, lastFailures)) as unknown as Response;
  };
  /** What each request body (kept by the SDK across its retries) was last answered with, by a 5xx. */
  const lastFailures = new WeakMap<object, string>();
  return guarded as typeof fetch;
}

/**
 * A 5xx whose body says the request itself cannot be served (its chat template refused it, it
 * does not fit the context) fails the same way every time: the SDK is told not to retry it
 * (`x-should-retry: false`, which it honours), as it is when the same request got the same 500
 * words before. A 502, 503 or 504 (a gateway, an overloaded server) is retried as before, however
 * often it says the same. The error body (at most 64 KiB) is read here, once, and handed to the SDK as text.
 */
async function withRetryVerdict(
  wire: WireResponse,
  body: string | Uint8Array | undefined,
  lastFailures: WeakMap<object, string>,
): Promise<WireResponse | ReadErrorResponse> {
  const text = await wire.text();
  const words = endpointMessage(text);
  const key = typeof body === 'object' ? body : undefined;
  const repeated = key !== undefined && words !== '' && lastFailures.get(key) === words;
  if (key && words) lastFailures.set(key, words);
  // A gateway's or an overloaded server's answer says the same every time and is worth the retries.
  const gateway = wire.status === 502 || wire.status === 503 || wire.status === 504;
  const refused = !gateway && DETERMINISTIC_FAILURE.test(words);
  const headers = new Headers(wire.headers);
  if (refused || (repeated && !gateway)) headers.set('x-should-retry', 'false');
  // Only a refusal of this very request says nothing of the endpoint's health (see toModelError).
  if (refused) headers.set(REQUEST_REFUSED_HEADER, '1');
  return new ReadErrorResponse(wire.url, wire.status, wire.statusText, headers, text);
}

/** Set on a 5xx the wire judged a refusal of the request itself (not of the endpoint's health). */
export const REQUEST_REFUSED_HEADER = 'x-stepwise-request-refused';

/** Words of a 5xx that no retry changes: a template that refuses the conversation, a request too large, a parse failure. */
const DETERMINISTIC_FAILURE =
  /chat template|jinja|must alternate|assistant messages at the end|failed to parse|parse error|invalid (request|argument|json|tool)|not supported|unsupported|context (size|length|window)|exceeds? the (available )?context|too long/i;

/** The endpoint's own message in an error body: OpenAI's `{error: {message}}`, `{message}`, `{detail}`, or the text itself. */
export function endpointMessage(text: string): string {
  try {
    const body = JSON.parse(text) as unknown;
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const error = fields.error;
    const candidates = [typeof error === 'object' && error !== null ? (error as Record<string, unknown>).message : error, fields.message, fields.detail];
    for (const candidate of candidates) if (typeof candidate === 'string' && candidate.trim()) return candidate.trim();
    return '';
  } catch {
    return text.trim().startsWith('<') ? '' : text.trim();
  }
}

/** An error response whose (bounded) body was read already. */
class ReadErrorResponse {
  readonly ok = false;
  readonly body = null;
  constructor(
    readonly url: string,
    readonly status: number,
    readonly statusText: string,
    readonly headers: Headers,
    private readonly content: string,
  ) {}

  async text(): Promise<string> {
    return this.content;
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.content);
  }
}

/** Request headers as undici takes them, from what the SDK passes (a Headers object as a rule). */
function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (!headers) return record;
  const entries: Iterable<[string, string | undefined]> = Symbol.iterator in headers ? (headers as Iterable<[string, string]>) : Object.entries(headers);
  for (const [name, value] of entries) if (value !== undefined) record[name] = value;
  return record;
}

/** What the SDK reads of a response: status, headers, url, `text()`, `json()`, and the body it iterates. */
class WireResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly body: BoundedBody;

  constructor(
    readonly url: string,
    response: Dispatcher.ResponseData,
    limits: BodyLimits,
    signal: AbortSignal | undefined,
  ) {
    this.status = response.statusCode;
    this.statusText = response.statusText;
    this.ok = this.status >= 200 && this.status < 300;
    this.headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) this.headers.append(name, one);
    }
    // A redirect's address as the SDK's error shows it: whole, even when the endpoint sent a path.
    const location = this.headers.get('location');
    if (location && this.status >= 300 && this.status < 400) this.headers.set('location', absolute(location, url));
    const streamed = (this.headers.get('content-type') ?? '').includes('text/event-stream');
    this.body = new BoundedBody(response.body, this.ok, streamed, limits, signal);
  }

  /** The body as text, a byte order mark dropped (as fetch's `text()` does). */
  async text(): Promise<string> {
    return UTF8.decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.bytes();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  private async bytes(): Promise<Buffer> {
    const chunks: Uint8Array[] = [];
    for await (const chunk of this.body) chunks.push(chunk);
    return Buffer.concat(chunks);
  }
}

const UTF8 = new TextDecoder();

/** `location` as a whole URL, read against the request's. */
function absolute(location: string, base: string): string {
  try {
    return new URL(location, base).href;
  } catch {
    return location;
  }
}

/** The SDK's log calls (message first) as the server's logger takes them. */
function sdkLogger(logger: Logger) {
  const line = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string) => logger[level]({ component: 'openai-sdk' }, message);
  return { debug: line('debug'), info: line('debug'), warn: line('warn'), error: line('warn') };
}
