import OpenAI, { AzureOpenAI } from 'openai';
import { Agent, type Dispatcher, EnvHttpProxyAgent, fetch as undiciFetch, Response as UndiciResponse } from 'undici';
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
 * undici's fetch on `dispatcher`, with every response body bounded: a successful one errors with
 * a retryable ModelError after `idleTimeoutMs` of silence (the clock runs only while a read waits
 * for the endpoint), a whole reply larger than LLM_MAX_OUTPUT_CHARS allows and a stream line
 * longer than that are refused before more is buffered, and an error body is cut at 64 KiB.
 * Refusing or stalling cancels the body, which closes the connection (the endpoint sees the
 * request aborted).
 */
export function guardedFetch(dispatcher: Dispatcher, limits: BodyLimits): typeof fetch {
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await undiciFetch(input as string, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1]);
    if (!response.body) return response as unknown as Response;
    return new UndiciResponse(boundedBody(response as unknown as Response, limits), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    }) as unknown as Response;
  };
  return guarded as typeof fetch;
}

function boundedBody(response: Response, limits: BodyLimits): ReadableStream<Uint8Array> {
  const upstream = response.body!.getReader();
  const ok = response.ok;
  const streamed = (response.headers.get('content-type') ?? '').includes('text/event-stream');
  const maxBytes = ok ? maxReplyBytes(limits.maxOutputChars) : MAX_ERROR_BODY_BYTES;
  let bytes = 0;
  const eventBoundary = new EventBoundary();
  let failure: Error | undefined;
  let waiting = false;
  let timer: NodeJS.Timeout | undefined;
  const stop = (reason: Error) => {
    failure ??= reason;
    clearTimeout(timer);
    upstream.cancel(reason).catch(() => undefined);
  };
  return new ReadableStream<Uint8Array>(
    {
      start() {
        if (!ok) return;
        timer = setTimeout(() => {
          if (waiting) stop(new ModelError(`The model stream stalled: nothing for ${seconds(limits.idleTimeoutMs)}`, { retryable: true }));
        }, limits.idleTimeoutMs);
        timer.unref();
      },
      async pull(controller) {
        if (failure) throw failure;
        timer?.refresh();
        waiting = true;
        let result: Awaited<ReturnType<typeof upstream.read>>;
        try {
          result = await upstream.read();
        } catch (error) {
          clearTimeout(timer);
          throw failure ?? error;
        } finally {
          waiting = false;
        }
        if (failure) throw failure;
        if (result.done) {
          clearTimeout(timer);
          controller.close();
          return;
        }
        const chunk = result.value;
        if (!ok) {
          // An error body: what fits is kept, the rest never read.
          const room = maxBytes - bytes;
          bytes += chunk.byteLength;
          if (chunk.byteLength < room) return controller.enqueue(chunk);
          controller.enqueue(chunk.subarray(0, room));
          controller.close();
          upstream.cancel().catch(() => undefined);
          return;
        }
        // A stream is read event by event, so only one event must fit; a whole reply must fit whole.
        bytes = streamed ? eventBoundary.bytesOpen(chunk) : bytes + chunk.byteLength;
        if (bytes > maxBytes) {
          stop(replyTooLarge(limits.maxOutputChars));
          throw failure;
        }
        controller.enqueue(chunk);
      },
      cancel(reason) {
        clearTimeout(timer);
        return upstream.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
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
