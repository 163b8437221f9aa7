import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, ModelError } from '../errors.ts';
import type { TokenUsage } from '../messages.ts';
import type { CompletionRequest, CompletionResult } from './llm-client.ts';
import { roundUsd } from './model-prices.ts';
import { addUsage } from './token-usage.ts';
import { REQUEST_REFUSED_HEADER } from './model-wire.ts';

/** The endpoint as messages name it: its URL fit to show, and the variables that set its URL and key. */
export interface EndpointNames {
  endpoint: string;
  /** OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, or where the config file names the endpoint. */
  urlVariable: string;
  keyVariable: string;
}

export function endpointNames(config: Config, endpoint: string): EndpointNames {
  return config.llm.azure
    ? { endpoint, urlVariable: 'AZURE_OPENAI_ENDPOINT', keyVariable: 'AZURE_OPENAI_API_KEY' }
    : { endpoint, urlVariable: 'OPENAI_BASE_URL', keyVariable: 'OPENAI_API_KEY' };
}

/** What every request says of itself: X-Stepwise-Purpose, X-Stepwise-Run-Id, X-Stepwise-Node, and its trace context (traceparent) when traced. */
export function stepwiseHeaders(request: CompletionRequest): Record<string, string> {
  return {
    ...request.traceHeaders,
    'X-Stepwise-Purpose': request.purpose,
    ...(request.runId ? { 'X-Stepwise-Run-Id': request.runId } : {}),
    ...(request.nodeId ? { 'X-Stepwise-Node': request.nodeId } : {}),
  };
}

/**
 * The signal one call runs under: it aborts when the caller's does, or when `timeoutMs` have
 * passed (then `expired()` says so). `dispose()` stops the clock and lets go of the caller's signal.
 */
export function callDeadline(caller: AbortSignal, timeoutMs: number): { signal: AbortSignal; expired: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort(caller.reason);
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new DOMException('The model call ran out of time', 'AbortError'));
  }, timeoutMs);
  timer.unref();
  if (caller.aborted) onAbort();
  else caller.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    expired: () => expired && !caller.aborted,
    dispose: () => {
      clearTimeout(timer);
      caller.removeEventListener('abort', onAbort);
    },
  };
}

export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

/**
 * Anything a call threw, as a ModelError whose message is for the user (what happened, what to
 * check) and whose `detail` holds the endpoint's own words, for the logs only. Failures the SDK
 * met before a response were retried by it already, so they are final; a body that failed on the
 * way may be asked for again.
 */
export function toModelError(error: unknown, where: EndpointNames): ModelError {
  const { endpoint } = where;
  if (error instanceof ModelError) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelError(`The model endpoint at ${endpoint} did not answer in time (LLM_TIMEOUT_MS)`, { cause: error });
  }
  if (error instanceof APIConnectionError && !(error instanceof APIUserAbortError)) {
    const reason = connectionFailure(error);
    return new ModelError(
      `Could not reach the model endpoint at ${endpoint}${reason ? ` (${reason})` : ''}: check ${where.urlVariable} and that the server is running`,
      {
        cause: error,
      },
    );
  }
  if (error instanceof APIError && error.status !== undefined) {
    const status = error.status;
    const words = endpointWords(error);
    // A redirect says where to instead; a refused key's words may echo the key: neither is shown.
    const said = (status >= 300 && status < 400) || status === 401 || status === 403 ? '' : shownWords(words);
    // A refusal of this request (a 4xx but auth, quota and a wrong path, or a 5xx the wire found
    // deterministic) says nothing of the endpoint's health; the next request may well go through.
    const aboutRequest = status === 400 || status === 413 || status === 422 || (status >= 500 && error.headers?.get(REQUEST_REFUSED_HEADER) === '1');
    return new ModelError(`The model endpoint answered ${status}: ${statusAdvice(status, error.headers, where)}${said ? `. It said: "${said}"` : ''}`, {
      status,
      cause: error,
      detail: shorten(words),
      ...(aboutRequest ? { category: 'request' as const } : {}),
    });
  }
  if (error instanceof APIError) {
    // An error event inside a stream that had begun well.
    const detail = endpointWords(error);
    return new ModelError('The model endpoint reported an error in its stream', {
      retryable: true,
      cause: error,
      ...(detail ? { detail: shorten(detail) } : {}),
    });
  }
  if (error instanceof SyntaxError) {
    return new ModelError('The model endpoint sent a malformed response', { retryable: true, cause: error, detail: shorten(error.message) });
  }
  // A reset connection or a body that ends in the middle surfaces as a plain error.
  return new ModelError('The model call failed on the way: the connection broke', {
    retryable: true,
    cause: error,
    detail: error instanceof Error ? shorten(error.message) : 'unknown failure',
  });
}

/** The endpoint's own words for a failure: an OpenAI-style `error.message`, or what its body held. */
export function endpointWords(error: APIError): string {
  const body: unknown = error.error;
  const message = typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : body;
  if (typeof message === 'string' && message) return message;
  if (message !== undefined && message !== null) return JSON.stringify(message);
  return error.status === undefined ? '' : 'status code (no body)';
}

/** What an HTTP status from the model endpoint means for the user, and what to check. */
export function statusAdvice(status: number, headers: Headers | undefined, where: EndpointNames): string {
  if (status >= 300 && status < 400) {
    const location = headers?.get('location');
    return `it redirects${location ? ` to ${safeLocation(location)}` : ''}; set ${where.urlVariable} to the address it points to`;
  }
  if (status === 401 || status === 403) return `the key was refused; check ${where.keyVariable}`;
  if (status === 404)
    return where.urlVariable === 'OPENAI_BASE_URL'
      ? 'no such model or path; check LLM_MODEL and OPENAI_BASE_URL (it usually ends in /v1)'
      : `no such deployment or path; check the model (deployment) and ${where.urlVariable}`;
  if (status === 429) return 'too many requests or no quota left; try again shortly';
  if (status === 400 || status === 413 || status === 422) return 'the request was refused (too long for the model, or an option it does not support)';
  if (status >= 500) return 'the model server failed; try again, or check its logs';
  return 'unexpected answer';
}

export function safeLocation(location: string): string {
  try {
    const parsed = new URL(location);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'another address';
  }
}

/** Why a connection failed, in words: connection refused, unknown host, … */
export function connectionFailure(error: Error): string | undefined {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 5 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ECONNREFUSED') return 'connection refused';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
    if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
    if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
    if (typeof code === 'string' && code.startsWith('CERT')) return 'TLS certificate problem';
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The endpoint's own words as a person may read them: one line, no control characters, nothing
 * that looks like a key or a bearer token, at most 200 characters.
 */
export function shownWords(words: string): string {
  if (words === 'status code (no body)') return '';
  const line = words
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed here
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ')
    .replace(/\b(sk|pk|rk|xai)-[A-Za-z0-9_-]{8,}/g, '[redacted]')
    .replace(/\b(AIza[0-9A-Za-z_-]{20,}|gsk_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{16,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]+|[0-9a-f]{32,})\b/gi, '[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(/\s+/g, ' ')
    .trim();
  return shorten(line, 200);
}

export function shorten(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Whether a failed call may go on to the route's next model: the endpoint failed (5xx), kept
 * refusing for load (429 after the SDK's retries), did not answer in time, or could not be
 * reached. A refusal of the request itself (400, a key refused) would fail on any model alike.
 */
export function fallsBack(error: unknown): boolean {
  if (!(error instanceof ModelError)) return false;
  if (error.code === ERROR_CODE.modelTimeout) return true;
  if (error.status !== undefined) return error.status >= 500 || error.status === 429;
  return error.cause instanceof APIConnectionError && !(error.cause instanceof APIUserAbortError);
}

/** Both calls' tokens and cost, as one call's. */
export function bothSpent(first: CompletionResult<never>, second: CompletionResult<never>): { usage?: TokenUsage; costUsd: number | null } {
  const usage = addUsage(first.usage, second.usage);
  const costUsd = first.costUsd === null || second.costUsd === null ? null : roundUsd((first.costUsd ?? 0) + (second.costUsd ?? 0));
  return { ...(usage ? { usage } : {}), costUsd };
}

/** The error with what an earlier, rejected reply of the same call cost. */
export function withSpending(error: ModelError, reply: CompletionResult<never>): ModelError {
  return new ModelError(error.message, {
    ...(error.status === undefined ? {} : { status: error.status }),
    retryable: error.retryable,
    cause: error.cause ?? error,
    ...(error.detail === undefined ? {} : { detail: error.detail }),
    ...(error.category === undefined ? {} : { category: error.category }),
    code: error.code as typeof ERROR_CODE.model,
    spent: { ...(reply.usage ? { usage: reply.usage } : {}), costUsd: reply.costUsd ?? null, ...(reply.model ? { model: reply.model } : {}) },
  });
}
