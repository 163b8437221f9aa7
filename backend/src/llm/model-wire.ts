import OpenAI, { AzureOpenAI } from 'openai';
import { Agent, type Dispatcher, EnvHttpProxyAgent } from 'undici';
import type { Config } from '../config/config.ts';
import { ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/**
 * How long an idle connection to the model endpoint is kept for the next call. A server that
 * announces a shorter keep-alive in its response headers is believed.
 */
const IDLE_CONNECTION_MS = 4_000;
/** Only the first bytes of an error body are ever read; the rest is not. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Room for the JSON around a reply: ids, roles, usage, finish reasons. */
const ENVELOPE_BYTES = 64 * 1024;
/** A character of a JSON string takes at most six bytes (\uXXXX), so a reply under the cap always fits. */
const BYTES_PER_CHAR = 6;

/** What the body of a model response may cost before it is refused. */
export interface BodyLimits {
  /** Longest silence between two chunks of a successful response's body. */
  idleTimeoutMs: number;
  /** LLM_MAX_OUTPUT_CHARS: sets the largest whole reply and the longest line of a stream. */
  maxOutputChars: number;
}

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

/** The longest whole reply, in bytes, that LLM_MAX_OUTPUT_CHARS allows. */
export function maxReplyBytes(maxOutputChars: number): number {
  return maxOutputChars * BYTES_PER_CHAR + ENVELOPE_BYTES;
}

/** The error for a reply larger than LLM_MAX_OUTPUT_CHARS allows (not retried: the next would be as large). */
export function replyTooLarge(maxOutputChars: number): ModelError {
  return new ModelError(
    `The model's reply was larger than ${maxReplyBytes(maxOutputChars).toLocaleString('en-US')} bytes, more than ` +
      `${maxOutputChars.toLocaleString('en-US')} characters can take (LLM_MAX_OUTPUT_CHARS)`,
  );
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

/**
 * A response body read chunk by chunk, bounded: it fails with a retryable ModelError after
 * `idleTimeoutMs` of silence (the clock runs only while a read waits for the endpoint), a
 * whole reply larger than LLM_MAX_OUTPUT_CHARS allows and a stream event longer than that are
 * refused before more is buffered, and an error body is cut at 64 KiB. Refusing or stalling
 * destroys the body, which closes the connection (the endpoint sees the request aborted). Let go
 * of before its end (the SDK does so after `[DONE]`), the rest is read off and dropped so the
 * connection serves the next call, unless the request was aborted or the rest is long or slow.
 */
class BoundedBody implements AsyncIterableIterator<Uint8Array> {
  private readonly maxBytes: number;
  private readonly eventBoundary = new EventBoundary();
  private bytes = 0;
  private failure: Error | undefined;
  /** The endpoint's end was read. */
  private ended = false;
  /** An error body was cut: nothing more is handed out. */
  private cut = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: Dispatcher.ResponseData['body'],
    private readonly ok: boolean,
    private readonly streamed: boolean,
    private readonly limits: BodyLimits,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.maxBytes = ok ? maxReplyBytes(limits.maxOutputChars) : MAX_ERROR_BODY_BYTES;
    const wake = this.wakeReader;
    stream.on('readable', wake);
    stream.on('end', () => {
      this.ended = true;
      wake();
    });
    stream.on('error', (error: Error) => {
      this.failure ??= error;
      clearTimeout(this.timer);
      wake();
    });
    stream.on('close', wake);
  }

  /** Resumes a read waiting for the endpoint. */
  private readonly wakeReader = () => {
    const waiting = this.wake;
    this.wake = undefined;
    waiting?.();
  };

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      if (this.cut) return { value: undefined, done: true };
      if (this.failure) throw this.failure;
      const chunk: Buffer | null = this.stream.read();
      if (chunk !== null) return this.take(chunk);
      if (this.ended || this.stream.destroyed) return this.finish();
      await this.waitForData();
    }
  }

  async return(): Promise<IteratorResult<Uint8Array>> {
    clearTimeout(this.timer);
    if (!this.ended && !this.cut && !this.stream.destroyed) {
      if (this.failure || this.signal?.aborted) this.stream.destroy(this.failure);
      else this.dropRest();
    }
    return { value: undefined, done: true };
  }

  private take(chunk: Buffer): IteratorResult<Uint8Array> {
    if (!this.ok) {
      // An error body: what fits is kept, the rest never read.
      const room = this.maxBytes - this.bytes;
      this.bytes += chunk.byteLength;
      if (chunk.byteLength < room) return { value: chunk, done: false };
      this.cut = true;
      this.stream.destroy();
      return { value: chunk.subarray(0, room), done: false };
    }
    // A stream is read event by event, so only one event must fit; a whole reply must fit whole.
    this.bytes = this.streamed ? this.eventBoundary.bytesOpen(chunk) : this.bytes + chunk.byteLength;
    if (this.bytes > this.maxBytes) throw this.fail(replyTooLarge(this.limits.maxOutputChars));
    return { value: chunk, done: false };
  }

  private finish(): IteratorResult<Uint8Array> {
    clearTimeout(this.timer);
    if (this.ended) return { value: undefined, done: true };
    // Destroyed before its end: by its own error (not yet emitted), or the request was aborted.
    throw this.stream.errored ?? this.signal?.reason ?? new ModelError('The model call failed on the way: the connection broke', { retryable: true });
  }

  private waitForData(): Promise<void> {
    // One clock for the body, set going again at each wait; it fires into nothing between waits.
    if (this.timer) this.timer.refresh();
    else {
      this.timer = setTimeout(() => {
        if (this.wake) this.fail(new ModelError(`The model stream stalled: nothing for ${seconds(this.limits.idleTimeoutMs)}`, { retryable: true }));
      }, this.limits.idleTimeoutMs);
      this.timer.unref();
    }
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  /** Refuses the rest of the body: the connection is closed and every read from now on fails (with the first reason). */
  private fail(reason: Error): Error {
    this.failure ??= reason;
    clearTimeout(this.timer);
    this.stream.destroy(reason);
    return this.failure;
  }

  /**
   * Reads off the little a finished reply may still hold (its last bytes, the end of its
   * chunking): at most 64 KiB more, within the idle timeout, or the connection is closed.
   */
  private dropRest(): void {
    const { stream } = this;
    const idle = setTimeout(() => stream.destroy(), this.limits.idleTimeoutMs);
    idle.unref();
    let room = MAX_ERROR_BODY_BYTES;
    // Without a 'readable' listener the stream flows: what comes is dropped as it comes.
    stream.off('readable', this.wakeReader);
    stream.on('close', () => clearTimeout(idle));
    stream.on('data', (chunk: Buffer) => {
      room -= chunk.byteLength;
      if (room < 0) stream.destroy();
    });
    stream.resume();
  }
}

/** The blank lines that end a server-sent event, however its lines end. */
const BOUNDARIES = ['\n\n', '\r\r', '\r\n\r\n'] as const;

/**
 * Follows a server-sent event stream chunk by chunk and says how many bytes the event still open
 * holds: its lines are buffered by the SDK's reader until the blank line that ends it, so that is
 * what must stay bounded. A boundary split across two chunks is found too.
 */
class EventBoundary {
  private open = 0;
  /** The last bytes of the stream so far, for a boundary that began in the previous chunk. */
  private tail = Buffer.alloc(0);

  bytesOpen(chunk: Uint8Array): number {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let end = -1;
    for (const boundary of BOUNDARIES) end = Math.max(end, endOf(bytes, boundary));
    if (end === -1 && this.tail.byteLength) {
      // Only a boundary across the seam is looked for here: the tail alone held none.
      const seam = Buffer.concat([this.tail, bytes.subarray(0, 3)]);
      for (const boundary of BOUNDARIES) {
        const at = endOf(seam, boundary);
        if (at > this.tail.byteLength) end = Math.max(end, at - this.tail.byteLength);
      }
    }
    this.open = end === -1 ? this.open + bytes.byteLength : bytes.byteLength - end;
    this.tail = Buffer.from(bytes.subarray(Math.max(0, bytes.byteLength - 3)));
    return this.open;
  }
}

/** Where the last `needle` in `bytes` ends, or -1. */
function endOf(bytes: Buffer, needle: string): number {
  const at = bytes.lastIndexOf(needle);
  return at === -1 ? -1 : at + needle.length;
}

/** The SDK's log calls (message first) as the server's logger takes them. */
function sdkLogger(logger: Logger) {
  const line = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string) => logger[level]({ component: 'openai-sdk' }, message);
  return { debug: line('debug'), info: line('debug'), warn: line('warn'), error: line('warn') };
}

/** A duration for messages: "0.3 s", "60 s". */
export function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toFixed(3))} s`;
}
