import { ensureAlternation } from './alternation.ts';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
// Types only: the request and its messages in the shape the API documents. The SDK's runtime is not used.
import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import { abortReason } from '../util/abort.ts';
import type { CompletionRequest, CompletionResult, LlmClient, LlmMessage, OutputSchema, TokenUsage } from './llm-client.ts';
import { ConnectionFailedError, type Endpoint, endpointOf, postJson, readTextPrefix, ResponseTimeoutError } from './http-transport.ts';
import type { ReplyAssembler } from './reply-assembler.ts';
import { readStreamedReply, readWholeReply } from './reply-reader.ts';
import { seconds } from './response-body.ts';
import { withRetries } from './retry.ts';
import { askForJson, parseReply, reAsk, responseFormat } from './structured-output.ts';
import { readTokenUsage } from './token-usage.ts';

const MAX_RETRY_DELAY_MS = 30_000;
/** Only the first lines of an error body are ever shown; the rest is not read. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * Talks Chat Completions to any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp, LM Studio.
 *
 * It makes the HTTP request itself (http-transport.ts) rather than through the openai SDK: the
 * adapter already did everything the SDK's request path adds (retries that honour the run's signal,
 * abort on stop, reading the body in bounded pieces with idle and total clocks), and the SDK with
 * fetch under it cost several times the CPU of a plain node:http request per call (see
 * bench/RESULTS.md). The body is serialised once, here.
 */
@injectable()
export class OpenAiLlmClient implements LlmClient {
  readonly isDemo = false;
  readonly modelName: string;
  /** The base URL, for messages (never with credentials). */
  readonly endpoint: string;
  private readonly target: Endpoint;
  private readonly headers: Record<string, string>;

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    this.modelName = config.llm.model;
    const baseUrl = config.llm.baseUrl ?? 'https://api.openai.com/v1';
    this.endpoint = safeEndpoint(baseUrl);
    // The base URL with the path after it, as the openai SDK joins them.
    this.target = endpointOf(new URL(`${baseUrl.replace(/\/+$/, '')}/chat/completions`));
    this.headers = {
      // Local servers need no key; sending a placeholder keeps servers that expect the header content.
      authorization: `Bearer ${config.llm.apiKey ?? 'no-key'}`,
      accept: 'application/json',
      'user-agent': 'Stepwise',
    };
  }

  async complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    const output = request.schema;
    if (!output) return this.call(request);
    // Data: as structured output, or asked for in the prompt; read leniently, asked for once more.
    const messages = this.config.llm.structuredOutput ? request.messages : askForJson(request.messages, output);
    const first = await this.call({ ...request, messages }, output);
    const parsed = parseReply(first.text, output.zod);
    if (parsed.ok) return { ...first, parsed: parsed.value };
    this.logger.warn({ purpose: request.purpose, schema: output.name, problem: parsed.problem }, 'the model\'s data did not fit its schema; asking once more');
    const second = await this.call({ ...request, messages: reAsk(messages, first.text, output, parsed.problem) }, output);
    const again = parseReply(second.text, output.zod);
    if (!again.ok) {
      throw new ModelError(`The model's answer did not fit the "${output.name}" schema, twice: ${again.problem}`, {
        category: 'output',
        detail: second.text.slice(0, 500),
      });
    }
    const usage = addUsage(first.usage, second.usage);
    return { ...second, ...(usage ? { usage } : {}), parsed: again.value };
  }

  /** One call, retried where that is safe, within LLM_TOTAL_TIMEOUT_MS. */
  private async call(request: CompletionRequest<unknown>, output?: OutputSchema<unknown>): Promise<CompletionResult<never>> {
    const { totalTimeoutMs } = this.config.llm;
    const deadline = callDeadline(request.signal, totalTimeoutMs);
    const policy = {
      maxRetries: this.config.llm.maxRetries,
      baseDelayMs: this.config.llm.retryBaseMs,
      maxDelayMs: MAX_RETRY_DELAY_MS,
    };
    try {
      const result = await withRetries(
        () => this.attempt(request, deadline.signal, output),
        policy,
        deadline.signal,
        (error, delayMs, attemptNumber) =>
          this.logger.warn(
            { purpose: request.purpose, status: error.status, delayMs: Math.round(delayMs), attempt: attemptNumber },
            'model call failed, retrying',
          ),
      );
      // A stop that came as the reply finished still wins: the caller asked for nothing more.
      if (request.signal.aborted) throw abortReason(request.signal);
      return result;
    } catch (error) {
      // A stop is the caller's, and rejects as before; running out of time is a model failure.
      if (request.signal.aborted) throw abortReason(request.signal);
      if (deadline.expired()) {
        throw new ModelError(`The model did not finish within ${seconds(totalTimeoutMs)} (LLM_TOTAL_TIMEOUT_MS)`, {
          code: ERROR_CODE.modelTimeout,
          cause: error,
        });
      }
      throw error;
    } finally {
      deadline.dispose();
    }
  }

  /** One request. `signal` aborts on a stop and when the whole call's time is up. */
  private async attempt(request: CompletionRequest, signal: AbortSignal, output: OutputSchema<unknown> | undefined): Promise<CompletionResult<never>> {
    const { streaming } = this.config.llm;
    let streamedText = false;
    try {
      const response = await postJson(this.target, JSON.stringify(this.requestBody(request, output)), {
        headers: { ...this.headers, ...stepwiseHeaders(request) },
        signal,
        // This clock covers the wait for the response's headers; the body has its own clocks below.
        responseTimeoutMs: this.config.llm.timeoutMs,
      });
      const status = response.statusCode ?? 0;
      if (status < 200 || status > 299) throw await statusError(response, status, signal);
      // The body is read here, in bounded pieces, never buffered whole.
      const reading = { signal, idleTimeoutMs: this.config.llm.streamIdleTimeoutMs, maxOutputChars: this.config.llm.maxOutputChars };
      if (!streaming) return this.finish(await readWholeReply(response, reading), request, { streamed: false });
      const reply = await readStreamedReply(response, reading, (delta) => {
        streamedText = true;
        request.onDelta?.(delta);
      });
      return this.finish(reply, request, { streamed: true });
    } catch (error) {
      if (signal.aborted) throw error; // complete() tells a stop from the deadline
      const modelError = toModelError(error, this.endpoint);
      if (modelError.detail) this.logger.warn({ purpose: request.purpose, status: modelError.status, detail: modelError.detail }, 'model endpoint error');
      // Text already shown to the user must not be streamed twice, so a broken stream is final.
      if (streamedText && modelError.retryable) {
        throw new ModelError(`The model's stream broke off: ${modelError.message}`, { cause: error });
      }
      throw modelError;
    }
  }

  /** The request as the endpoint reads it. */
  private requestBody(request: CompletionRequest, output: OutputSchema<unknown> | undefined): ChatCompletionCreateParamsBase {
    const { streaming, streamUsage } = this.config.llm;
    return {
      ...(output && this.config.llm.structuredOutput ? { response_format: responseFormat(output) } : {}),
      model: this.config.llm.model,
      messages: (this.config.llm.strictAlternation ? ensureAlternation(request.messages) : request.messages).map(toOpenAiMessage),
      ...(this.config.llm.temperature === undefined ? {} : { temperature: this.config.llm.temperature }),
      ...(request.tools?.length
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function' as const,
              function: { name: tool.name, description: tool.description, parameters: tool.parameters },
            })),
          }
        : {}),
      stream: streaming,
      ...(streaming && streamUsage ? { stream_options: { include_usage: true } } : {}),
    };
  }

  /** The assembled reply, its usage checked; a reply past the cap ends with a note saying so. */
  private finish(assembler: ReplyAssembler, request: CompletionRequest, how: { streamed: boolean }): CompletionResult<never> {
    const usage = readTokenUsage(assembler.reportedUsage, (field) =>
      this.logger.warn({ purpose: request.purpose, field }, 'the model reported an invalid token count; it is ignored'),
    );
    const { text, toolCalls } = assembler.result();
    const result: CompletionResult<never> = { text, toolCalls, ...(usage ? { usage } : {}) };
    if (!assembler.truncated) return result;
    const { maxOutputChars } = this.config.llm;
    this.logger.warn({ purpose: request.purpose, max_output_chars: maxOutputChars }, 'model reply cut at LLM_MAX_OUTPUT_CHARS');
    if (!text.trim() && toolCalls.length === 0) {
      throw new ModelError(
        `The model's reply passed ${formatCount(maxOutputChars)} characters (LLM_MAX_OUTPUT_CHARS) before anything usable`,
      );
    }
    const note = `\n\n[Reply cut at ${formatCount(maxOutputChars)} characters: LLM_MAX_OUTPUT_CHARS]`;
    if (how.streamed) request.onDelta?.(note);
    return { ...result, text: text + note, truncated: true };
  }
}

/** What every request says of itself: X-Stepwise-Purpose, X-Stepwise-Run-Id, X-Stepwise-Node. */
function stepwiseHeaders(request: CompletionRequest): Record<string, string> {
  return {
    'X-Stepwise-Purpose': request.purpose,
    ...(request.runId ? { 'X-Stepwise-Run-Id': request.runId } : {}),
    ...(request.nodeId ? { 'X-Stepwise-Node': request.nodeId } : {}),
  };
}

function addUsage(first: TokenUsage | undefined, second: TokenUsage | undefined): TokenUsage | undefined {
  if (!first) return second;
  if (!second) return first;
  return { promptTokens: first.promptTokens + second.promptTokens, completionTokens: first.completionTokens + second.completionTokens };
}

/**
 * The signal one call runs under: it aborts when the caller's does, or when `timeoutMs` have
 * passed (then `expired()` says so). `dispose()` stops the clock and lets go of the caller's signal.
 */
function callDeadline(caller: AbortSignal, timeoutMs: number): { signal: AbortSignal; expired: () => boolean; dispose: () => void } {
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

function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

function toOpenAiMessage(message: LlmMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return message.toolCalls?.length
        ? {
            role: 'assistant',
            content: message.content,
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          }
        : { role: 'assistant', content: message.content ?? '' };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default: {
      const unexpected: never = message;
      throw new Error(`Unknown message role: ${JSON.stringify(unexpected)}`);
    }
  }
}

/**
 * A failed status as a ModelError, deciding whether it is worth retrying. The message is for the
 * user: what happened and what to check. What the endpoint said in its own words (the first
 * MAX_ERROR_BODY_BYTES of its body) is kept as the error's `detail`, for the logs only.
 */
async function statusError(response: IncomingMessage, status: number, signal: AbortSignal): Promise<ModelError> {
  const body = await readTextPrefix(response, MAX_ERROR_BODY_BYTES, signal);
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
  return new ModelError(`The model endpoint answered ${status}: ${statusAdvice(status, response.headers)}`, {
    status,
    retryable,
    retryAfterMs: retryAfterMs(response.headers),
    detail: shorten(errorDetail(body)),
  });
}

/** The endpoint's own words for a failure: an OpenAI-style `error.message`, or what the body holds. */
function errorDetail(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body.trim() || 'status code (no body)';
  }
  const error = typeof parsed === 'object' && parsed !== null ? (parsed as { error?: unknown }).error : undefined;
  const message = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
  if (message) return typeof message === 'string' ? message : JSON.stringify(message);
  return error ? JSON.stringify(error) : body.trim();
}

/** Anything else that went wrong on the way, as a ModelError. */
function toModelError(error: unknown, endpoint: string): ModelError {
  if (error instanceof ModelError) return error;
  if (error instanceof ResponseTimeoutError) {
    return new ModelError(`The model endpoint at ${endpoint} did not answer in time (LLM_TIMEOUT_MS)`, { retryable: true, cause: error });
  }
  if (error instanceof ConnectionFailedError) {
    const reason = connectionFailure(error);
    return new ModelError(`Could not reach the model endpoint at ${endpoint}${reason ? ` (${reason})` : ''}: check OPENAI_BASE_URL and that the server is running`, {
      retryable: true,
      cause: error,
    });
  }
  // A reset connection or a stream that ends in the middle surfaces as a plain error.
  return new ModelError('The model call failed on the way: the connection broke', {
    retryable: true,
    cause: error,
    detail: error instanceof Error ? shorten(error.message) : 'unknown failure',
  });
}

/** What an HTTP status from the model endpoint means for the user, and what to check. */
function statusAdvice(status: number, headers: IncomingHttpHeaders): string {
  if (status >= 300 && status < 400) {
    const location = typeof headers.location === 'string' ? ` to ${safeEndpoint(headers.location)}` : '';
    return `it redirects${location}; set OPENAI_BASE_URL to the address it points to`;
  }
  if (status === 401 || status === 403) return 'the key was refused; check OPENAI_API_KEY';
  if (status === 404) return 'no such model or path; check LLM_MODEL and OPENAI_BASE_URL (it usually ends in /v1)';
  if (status === 429) return 'too many requests or no quota left; try again shortly';
  if (status === 400 || status === 413 || status === 422) return 'the request was refused (too long for the model, or an option it does not support)';
  if (status >= 500) return 'the model server failed; try again, or check its logs';
  return 'unexpected answer';
}

/** Why a connection failed, in words: connection refused, unknown host, … */
function connectionFailure(error: Error): string | undefined {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 4 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'ECONNREFUSED') return 'connection refused';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
    if (code === 'ECONNRESET') return 'connection reset';
    if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return 'connection timed out';
    if (typeof code === 'string' && code.startsWith('CERT') ) return 'TLS certificate problem';
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

function retryAfterMs(headers: IncomingHttpHeaders): number | undefined {
  const milliseconds = Number(headers['retry-after-ms']);
  if (Number.isFinite(milliseconds) && milliseconds > 0) return milliseconds;
  const value = headers['retry-after'];
  if (!value) return undefined;
  const delaySeconds = Number(value);
  if (Number.isFinite(delaySeconds)) return Math.max(0, delaySeconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function shorten(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** A base URL fit to show: without user, password, query or fragment. */
export function safeEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'the configured endpoint';
  }
}
