import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions';
import { APIError } from 'openai';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import { abortReason, sleep } from '../util/abort.ts';
import { endWithTurn, ensureAlternation, refusesTurnOrder } from './alternation.ts';
import type { CompletionRequest, CompletionResult, LlmClient, OutputSchema } from './llm-client.ts';
import { checkVision, type ModelChoice, modelChain } from './model-routes.ts';
import { createModelWire, endpointOf, safeEndpoint, seconds } from './model-wire.ts';
import { completionAsChunk, ReplyAssembler } from './reply-assembler.ts';
import { finishReply } from './reply-finish.ts';
import { BodyBuffers, encodeRequest, requestObject } from './request-body.ts';
import { askForJson, parseReply, reAsk, responseFormat } from './structured-output.ts';
import { bothSpent, callDeadline, type EndpointNames, endpointNames, fallsBack, stepwiseHeaders, toModelError, withSpending } from './model-errors.ts';

/** The SDK's options of one request. */
type RequestOptions = NonNullable<Parameters<OpenAI['chat']['completions']['create']>[1]>;

/** The longest wait before reading a reply again after its body failed. */
const MAX_REREAD_DELAY_MS = 30_000;

/**
 * Talks Chat Completions through the openai SDK to OpenAI, Azure OpenAI or any compatible
 * endpoint (Ollama, vLLM, llama.cpp, LM Studio). The SDK builds the request, authenticates,
 * retries what fails before a response (its maxRetries honours retry-after and x-should-retry)
 * and parses the stream; Stepwise adds the model per purpose, LLM_PARAMS, the purpose / run /
 * node headers, the idle and total clocks, LLM_MAX_OUTPUT_CHARS, structured output, usage with
 * cost, and reading a reply again when its body failed before any text was shown.
 */
@injectable()
export class OpenAiLlmClient implements LlmClient {
  readonly isDemo = false;
  /** The SDK client of the endpoint the settings name now, and the URL and key it was made for (an admin may change them). */
  private main: { madeFor: string; client: OpenAI; dispatcher: { close(): Promise<void> } } | undefined;
  /** Where long chats' request bodies are written, call after call (see BodyBuffers). */
  private readonly bodies = new BodyBuffers();
  /** Models whose endpoint refused a conversation for its turn order: they get strictly alternating messages from then on. */
  private readonly strictModels = new Set<string>();
  /** The SDK clients of the config file's named endpoints, made on first use. */
  private readonly wires = new Map<string, Wire>();

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) private readonly logger: Logger,
  ) {
    this.mainClient();
  }

  get modelName(): string {
    return this.config.llm.model;
  }

  /** The base URL, for messages (never with credentials). */
  get endpoint(): string {
    return endpointOf(this.config);
  }

  /**
   * The SDK client of the settings' endpoint, made again when its URL or key has changed since
   * (the named endpoints' clients too); the old one's connections close once their requests end.
   */
  private mainClient(): OpenAI {
    const { llm } = this.config;
    const madeFor = JSON.stringify([llm.baseUrl, llm.apiKey, llm.azure?.endpoint, llm.azure?.apiKey]);
    if (this.main?.madeFor === madeFor) return this.main.client;
    const previous = this.main;
    const limits = { idleTimeoutMs: llm.streamIdleTimeoutMs, maxOutputChars: llm.maxOutputChars };
    this.main = { madeFor, ...createModelWire(this.config, this.logger, limits) };
    this.wires.clear();
    void previous?.dispatcher.close().catch(() => undefined);
    return this.main.client;
  }

  /**
   * The call on its purpose's model, and when that fails for the endpoint's sake (a 5xx, a 429
   * after the SDK's retries, no answer in time, no connection) on each fallback in turn. The
   * result names the model that answered (its cost is priced by it) and, after a fallback, the
   * models that failed and why. Images go only to models that see: others in the chain are passed over.
   */
  async complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    const chain = modelChain(request.purpose, this.config.llm);
    const hasImages = request.messages.some((message) => message.role === 'user' && message.images?.length);
    const seeing = hasImages ? chain.filter((choice) => choice.vision) : chain;
    if (seeing.length === 0) checkVision(request.purpose, request.messages, chain[0]!);
    const failures: Array<{ model: string; reason: string }> = [];
    for (const [index, choice] of seeing.entries()) {
      try {
        const result = await this.completeOn(request, choice);
        return failures.length ? { ...result, fallback: { from: seeing[0]!.model, failures } } : result;
      } catch (error) {
        const last = index === seeing.length - 1;
        if (last || request.signal.aborted || !fallsBack(error)) throw error;
        const reason = (error as ModelError).message;
        failures.push({ model: choice.model, reason });
        this.logger.warn(
          { purpose: request.purpose, model: choice.model, next: seeing[index + 1]!.model, reason },
          'the model failed; the call goes to the next model of its route',
        );
      }
    }
    throw new Error('unreachable: a model chain is never empty');
  }

  private async completeOn<T>(request: CompletionRequest<T>, choice: ModelChoice): Promise<CompletionResult<T>> {
    const output = request.schema;
    if (!output) return this.call(request, choice);
    // Data: as structured output, or asked for in the prompt; read leniently, asked for once more.
    const messages = this.config.llm.structuredOutput ? request.messages : askForJson(request.messages, output);
    const first = await this.call({ ...request, messages }, choice, output);
    const parsed = first.cutAtLimit ? CUT_AT_LIMIT : parseReply(first.text, output.zod);
    if (parsed.ok) return { ...first, parsed: parsed.value };
    this.logger.warn({ purpose: request.purpose, schema: output.name, problem: parsed.problem }, "the model's data did not fit its schema; asking once more");
    // A reply cut at the output limit is asked for again as it was, with room to finish (max_tokens).
    const retry = first.cutAtLimit
      ? { ...request, messages, maxTokens: this.config.llm.maxOutputTokens }
      : { ...request, messages: reAsk(messages, first.text, output, parsed.problem) };
    let second: CompletionResult<never>;
    try {
      second = await this.call(retry, choice, output);
    } catch (error) {
      throw error instanceof ModelError && !error.spent ? withSpending(error, first) : error;
    }
    const again = second.cutAtLimit ? CUT_AT_LIMIT : parseReply(second.text, output.zod);
    const spent = { ...bothSpent(first, second), model: second.model ?? first.model };
    if (!again.ok) {
      const message = second.cutAtLimit
        ? `The model's reply was cut at the model's output limit before its "${output.name}" data was complete, also with max_tokens ${this.config.llm.maxOutputTokens} (LLM_MAX_OUTPUT_TOKENS; the model server may cap replies lower)`
        : `The model's answer did not fit the "${output.name}" schema, twice: ${again.problem}`;
      throw new ModelError(message, { category: 'output', detail: second.text.slice(0, 500), spent });
    }
    return { ...second, ...spent, parsed: again.value };
  }

  /** One call within LLM_TOTAL_TIMEOUT_MS; a reply whose body failed before any text is read again. */
  private async call(request: WireRequest, choice: ModelChoice, output?: OutputSchema<unknown>): Promise<CompletionResult<never>> {
    const { totalTimeoutMs, maxRetries, retryBaseMs } = this.config.llm;
    const deadline = callDeadline(request.signal, totalTimeoutMs);
    try {
      for (let attempt = 0; ; attempt++) {
        const outcome = await this.attempt(request, choice, deadline.signal, output);
        if (outcome.ok) {
          // A stop that came as the reply finished still wins: the caller asked for nothing more.
          if (request.signal.aborted) throw abortReason(request.signal);
          return outcome.result;
        }
        if (!outcome.again || attempt >= maxRetries) throw outcome.error;
        const delayMs = Math.min(MAX_REREAD_DELAY_MS, Math.random() * retryBaseMs * 2 ** attempt);
        this.logger.warn(
          { purpose: request.purpose, delayMs: Math.round(delayMs), attempt: attempt + 1, reason: outcome.error.message },
          'model reply failed, asking again',
        );
        await sleep(delayMs, deadline.signal);
      }
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

  /**
   * One request through the SDK (which retries what fails before a response) and the reading of
   * its reply. A failure says whether asking again may help: only when the body failed on the
   * way and no text reached the user (text shown must not be streamed twice).
   */
  private async attempt(
    request: WireRequest,
    choice: ModelChoice,
    signal: AbortSignal,
    output: OutputSchema<unknown> | undefined,
  ): Promise<{ ok: true; result: CompletionResult<never> } | { ok: false; error: ModelError; again: boolean }> {
    const { streaming, maxOutputChars } = this.config.llm;
    const { model, params } = choice;
    const wire = this.wire(choice.endpoint);
    const assembler = new ReplyAssembler(maxOutputChars);
    let streamedText = false;
    let requestId: string | undefined;
    let body: Uint8Array | undefined;
    try {
      const { params: sent, options } = this.request(request, output, { model, params, azure: wire.azure }, signal);
      body = options.body as Uint8Array | undefined;
      if (streaming) {
        const { data: chunks, request_id } = await wire.client.chat.completions.create({ ...sent, stream: true }, options).withResponse();
        requestId = request_id ?? undefined;
        for await (const chunk of chunks) {
          const delta = assembler.add(chunk);
          if (delta) {
            streamedText = true;
            request.onDelta?.(delta);
          }
          // Leaving the loop aborts the request: the endpoint stops writing.
          if (assembler.truncated) break;
        }
        // The SDK ends a stream quietly when it is aborted; the caller tells a stop from the deadline.
        if (signal.aborted) throw abortReason(signal);
        // A cut connection can end an event stream quietly; only a finish_reason says the model finished.
        if (!assembler.finished && !assembler.truncated) throw new ModelError('The model stream ended before the model finished', { retryable: true });
      } else {
        const { data, request_id } = await wire.client.chat.completions.create({ ...sent, stream: false }, options).withResponse();
        requestId = request_id ?? undefined;
        assembler.add(completionAsChunk(data));
      }
      // A whole reply came: the endpoint read the request to its end, so its body may be written over.
      if (!assembler.truncated) this.bodies.release(body);
      const result = finishReply(assembler, request, { streamed: streaming, model, requestId }, { config: this.config, logger: this.logger });
      this.logger.debug({ purpose: request.purpose, model, request_id: requestId }, 'model call');
      return { ok: true, result };
    } catch (error) {
      if (signal.aborted) throw abortReason(signal);
      const modelError = toModelError(error, wire.names);
      requestId ??= error instanceof APIError ? (error.requestID ?? undefined) : undefined;
      if (!streamedText && refusesTurnOrder(modelError.detail) && !this.strictFor(model)) {
        // The endpoint's chat template needs strict turn-taking: from now on this model gets it, and this request again at once.
        this.strictModels.add(model);
        this.logger.info(
          { purpose: request.purpose, model, detail: modelError.detail },
          'the model endpoint needs alternating turns; sending them from now on',
        );
        return this.attempt(request, choice, signal, output);
      }
      this.logger.warn(
        {
          purpose: request.purpose,
          model,
          ...(choice.endpoint ? { endpoint: choice.endpoint } : {}),
          status: modelError.status,
          request_id: requestId,
          ...(modelError.detail ? { detail: modelError.detail } : {}),
        },
        'model call failed',
      );
      if (streamedText && modelError.retryable) {
        return { ok: false, again: false, error: new ModelError(`The model's stream broke off: ${modelError.message}`, { cause: error }) };
      }
      return { ok: false, again: modelError.retryable, error: modelError };
    }
  }

  /**
   * The request as the endpoint reads it, with LLM_PARAMS and the route's params merged into it
   * (they add fields, never replace the model, messages, tools or stream a call sets), as the
   * SDK's params and request options. The body goes as bytes encoded here (request-body.ts keeps
   * each message's JSON for the calls after): the SDK's `body` option stands in for the encoding
   * of its params, which then say only what the SDK reads of them. Azure OpenAI's client reads
   * the model from the body for the deployment's path, so there the SDK encodes the body itself.
   */
  private request(
    request: WireRequest,
    output: OutputSchema<unknown> | undefined,
    target: { model: string; params: Record<string, unknown>; azure: boolean },
    signal: AbortSignal,
  ): { params: ChatCompletionCreateParamsBase; options: RequestOptions } {
    const { streaming, streamUsage, temperature, structuredOutput, strictAlternation } = this.config.llm;
    const { model, params, azure } = target;
    const tail: Record<string, unknown> = {
      ...(temperature === undefined ? {} : { temperature }),
      ...(streaming && streamUsage ? { stream_options: { include_usage: true } } : {}),
      stream: streaming,
    };
    const head: Record<string, unknown> = {
      ...params,
      ...(output && structuredOutput ? { response_format: responseFormat(output) } : {}),
      ...(request.maxTokens ? outputLimit(params, request.maxTokens, this.config) : {}),
      model,
    };
    // The params' tools go when the call has tools of its own, as the call's replace them.
    for (const key of ['messages', ...(request.tools?.length ? ['tools'] : []), ...Object.keys(tail)]) delete head[key];
    const shaped = strictAlternation || this.strictFor(model) ? ensureAlternation(request.messages) : request.messages;
    const parts = { head, messages: endWithTurn(shaped, request.purpose), tools: request.tools, tail };
    const headers = stepwiseHeaders(request);
    if (azure) return { params: requestObject(parts) as unknown as ChatCompletionCreateParamsBase, options: { signal, headers } };
    return {
      params: { model, messages: [] },
      options: { signal, headers: { 'content-type': 'application/json', ...headers }, body: encodeRequest(parts, this.bodies) },
    };
  }

  /** The SDK client of an endpoint: the environment's (no name), or one of the config file's "endpoints". */
  private wire(name: string | undefined): Wire {
    const client = this.mainClient();
    const key = name ?? '';
    const known = this.wires.get(key);
    if (known) return known;
    const limits = { idleTimeoutMs: this.config.llm.streamIdleTimeoutMs, maxOutputChars: this.config.llm.maxOutputChars };
    let wire: Wire;
    const endpoint = name === undefined ? undefined : this.config.llm.endpoints[name];
    if (!endpoint) {
      wire = { client, azure: this.config.llm.azure !== undefined, names: endpointNames(this.config, this.endpoint) };
    } else {
      const llm =
        endpoint.kind === 'openai'
          ? { ...this.config.llm, provider: 'openai' as const, baseUrl: endpoint.baseUrl, apiKey: endpoint.apiKey, azure: undefined }
          : {
              ...this.config.llm,
              provider: 'azure' as const,
              azure: {
                endpoint: endpoint.endpoint,
                apiKey: endpoint.apiKey,
                deployment: undefined,
                apiVersion: endpoint.apiVersion ?? this.config.llm.azure?.apiVersion ?? '2024-10-21',
              },
            };
      const shown = safeEndpoint(endpoint.kind === 'openai' ? endpoint.baseUrl : endpoint.endpoint);
      wire = {
        client: createModelWire({ ...this.config, llm }, this.logger, limits).client,
        azure: endpoint.kind === 'azure',
        names: { endpoint: shown, urlVariable: `endpoints.${name} in the config file`, keyVariable: `endpoints.${name}.api_key` },
      };
    }
    this.wires.set(key, wire);
    return wire;
  }

  private strictFor(model: string): boolean {
    return this.strictModels.has(model);
  }
}

/** One endpoint's SDK client, whether it is Azure's (the body then goes as an object), and how messages name it. */
interface Wire {
  client: OpenAI;
  azure: boolean;
  names: EndpointNames;
}

/** A call as this adapter sends it: a max_tokens of its own when a reply cut at the output limit is asked for again. */
type WireRequest = CompletionRequest<unknown> & { maxTokens?: number };

/**
 * The output limit of a re-ask after a reply cut at it: in the field the request's params already
 * use (never lowered), else `max_completion_tokens` for OpenAI and Azure (their reasoning models
 * refuse `max_tokens`) and `max_tokens` for other servers (llama.cpp, Ollama, vLLM read it).
 */
function outputLimit(params: Record<string, unknown>, tokens: number, config: Config): Record<string, number> {
  const openAi = config.llm.azure !== undefined || !config.llm.baseUrl || /(^|\.)openai\.com(\/|$|:)/.test(new URL(config.llm.baseUrl).host);
  const field =
    'max_completion_tokens' in params ? 'max_completion_tokens' : 'max_tokens' in params ? 'max_tokens' : openAi ? 'max_completion_tokens' : 'max_tokens';
  const given = Number(params[field]);
  return { [field]: Number.isFinite(given) ? Math.max(given, tokens) : tokens };
}

/** What parsing a reply cut at the output limit gives: nothing, whatever it holds. */
const CUT_AT_LIMIT = { ok: false, problem: "the reply was cut at the model's output limit" } as const;
