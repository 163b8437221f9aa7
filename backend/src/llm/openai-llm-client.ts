import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { isAbortError, ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import { abortReason } from '../util/abort.ts';
import type { CompletionRequest, CompletionResult, LlmClient, LlmMessage, LlmToolCall } from './llm-client.ts';
import { withRetries } from './retry.ts';

const MAX_RETRY_DELAY_MS = 30_000;

/** Talks Chat Completions to any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, llama.cpp, LM Studio. */
@injectable()
export class OpenAiLlmClient implements LlmClient {
  readonly isDemo = false;
  readonly modelName: string;
  private readonly client: OpenAI;

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    this.modelName = config.llm.model;
    this.client = new OpenAI({
      // Local servers need no key, but the SDK insists on one.
      apiKey: config.llm.apiKey ?? 'no-key',
      baseURL: config.llm.baseUrl ?? 'https://api.openai.com/v1',
      // Retries are ours, so that they honour the run's signal and never repeat streamed text.
      maxRetries: 0,
      timeout: config.llm.timeoutMs,
    });
  }

  complete(request: CompletionRequest): Promise<CompletionResult> {
    const policy = {
      maxRetries: this.config.llm.maxRetries,
      baseDelayMs: this.config.llm.retryBaseMs,
      maxDelayMs: MAX_RETRY_DELAY_MS,
    };
    return withRetries(
      () => this.attempt(request),
      policy,
      request.signal,
      (error, delayMs, attemptNumber) =>
        this.logger.warn(
          { purpose: request.purpose, status: error.status, delayMs: Math.round(delayMs), attempt: attemptNumber },
          'model call failed, retrying',
        ),
    );
  }

  private async attempt(request: CompletionRequest): Promise<CompletionResult> {
    const body: ChatCompletionCreateParamsBase = {
      model: this.config.llm.model,
      messages: request.messages.map(toOpenAiMessage),
      ...(this.config.llm.temperature === undefined ? {} : { temperature: this.config.llm.temperature }),
      ...(request.tools?.length
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function' as const,
              function: { name: tool.name, description: tool.description, parameters: tool.parameters },
            })),
          }
        : {}),
    };
    let streamedText = false;
    try {
      if (!this.config.llm.streaming) {
        const response = await this.client.chat.completions.create({ ...body, stream: false }, { signal: request.signal });
        return fromCompletion(response);
      }
      const stream = await this.client.chat.completions.create(
        { ...body, stream: true, ...(this.config.llm.streamUsage ? { stream_options: { include_usage: true } } : {}) },
        { signal: request.signal },
      );
      const assembler = new StreamAssembler();
      for await (const chunk of stream) {
        const delta = assembler.add(chunk);
        if (delta) {
          streamedText = true;
          request.onDelta?.(delta);
        }
      }
      if (!assembler.finished) {
        // A cut connection can end an event stream quietly; only a finish_reason says the model finished.
        throw new ModelError('The model stream ended before the model finished', { retryable: true });
      }
      return assembler.result();
    } catch (error) {
      if (isAbortError(error, request.signal)) throw abortReason(request.signal);
      const modelError = toModelError(error);
      // Text already shown to the user must not be streamed twice, so a broken stream is final.
      if (streamedText && modelError.retryable) {
        throw new ModelError(`The model's stream broke off: ${modelError.message}`, { cause: error });
      }
      throw modelError;
    }
  }
}

/** Collects streamed chunks into text and complete tool calls. */
class StreamAssembler {
  private text = '';
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private usage: CompletionResult['usage'];
  /** True once a chunk carried a finish_reason. */
  finished = false;

  /** Adds one chunk; returns its text delta, if any. */
  add(chunk: ChatCompletionChunk): string {
    if (chunk.usage) {
      this.usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    }
    const choice = chunk.choices?.[0];
    if (choice?.finish_reason) this.finished = true;
    const delta = choice?.delta;
    if (!delta) return '';
    for (const [position, call] of (delta.tool_calls ?? []).entries()) {
      const index = call.index ?? position;
      const current = this.calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (call.id) current.id = call.id;
      if (call.function?.name) current.name += call.function.name;
      if (call.function?.arguments) current.arguments += call.function.arguments;
      this.calls.set(index, current);
    }
    const text = typeof delta.content === 'string' ? delta.content : '';
    this.text += text;
    return text;
  }

  result(): CompletionResult {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({ ...call, id: call.id || `call_${index}` }));
    return { text: this.text, toolCalls, ...(this.usage ? { usage: this.usage } : {}) };
  }
}

function fromCompletion(response: OpenAI.Chat.Completions.ChatCompletion): CompletionResult {
  const message = response?.choices?.[0]?.message;
  if (!message) throw new ModelError('The model endpoint sent a malformed response (no choices)', { retryable: true });
  const toolCalls: LlmToolCall[] = (message.tool_calls ?? []).flatMap((call, index) =>
    call.type === 'function'
      ? [{ id: call.id || `call_${index}`, name: call.function.name, arguments: call.function.arguments ?? '' }]
      : [],
  );
  return {
    text: message.content ?? '',
    toolCalls,
    ...(response.usage
      ? { usage: { promptTokens: response.usage.prompt_tokens, completionTokens: response.usage.completion_tokens } }
      : {}),
  };
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

/** Maps the SDK's errors to ModelError, deciding which are worth retrying. */
function toModelError(error: unknown): ModelError {
  if (error instanceof ModelError) return error;
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new ModelError('The model endpoint timed out', { retryable: true, cause: error });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new ModelError('Could not reach the model endpoint', { retryable: true, cause: error });
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    const status = error.status;
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const detail = shorten(error.message.replace(/^\d{3}\s*/, ''));
    return new ModelError(`The model endpoint answered ${status}${detail ? `: ${detail}` : ''}`, {
      status,
      retryable,
      retryAfterMs: retryAfterMs(error.headers),
      cause: error,
    });
  }
  // A reset connection or a stream that ends in the middle surfaces as a plain error.
  const detail = error instanceof Error ? shorten(error.message) : 'unknown failure';
  return new ModelError(`The model call failed: ${detail}`, { retryable: true, cause: error });
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const milliseconds = Number(headers?.get('retry-after-ms'));
  if (Number.isFinite(milliseconds) && milliseconds > 0) return milliseconds;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function shorten(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
