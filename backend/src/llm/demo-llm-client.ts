import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, ModelError } from '../errors.ts';
import { TOKENS } from '../tokens.ts';
import { sleep } from '../util/abort.ts';
import type { CompletionRequest, CompletionResult, DemoKit, DemoResponder, LlmClient } from './llm-client.ts';

/**
 * An offline, deterministic stand-in for a model, so that a fresh checkout works end to end with
 * no key. It answers each call by its purpose (`STRATEGY.PURPOSE`): every strategy brings its own
 * responder (the demo of plain chat is the `chat` strategy's), so nothing here knows a strategy.
 */
@injectable()
export class DemoLlmClient implements LlmClient {
  readonly isDemo = true;
  readonly modelName = 'Demo model (offline, built in)';
  private readonly kit: DemoKit;

  constructor(
    @inject(TOKENS.Config) config: Config,
    @inject(TOKENS.DemoResponders) private readonly responders: ReadonlyMap<string, DemoResponder>,
  ) {
    const delayMs = config.llm.demoDelayMs;
    this.kit = {
      pause: (signal) => sleep(delayMs, signal),
      // Streams text word by word, as a real model would.
      async say(text, request) {
        for (const piece of text.match(/\S+\s*|\s+/g) ?? []) {
          await sleep(delayMs, request.signal);
          request.onDelta?.(piece);
        }
        return { text, toolCalls: [] };
      },
      unknownPurpose(request) {
        throw new ModelError(`The demo model has no answer for "${request.purpose}"`);
      },
    };
  }

  async complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
    if (request.messages.some((message) => message.role === 'user' && message.images?.length)) {
      throw new ModelError(
        'The message has images, but the offline demo model cannot see them. Configure a vision model (LLM_PROVIDER and LLM_MODEL, with LLM_VISION=true when its name does not say so) to ask about images.',
        { code: ERROR_CODE.visionUnsupported, category: 'request' },
      );
    }
    const strategy = request.purpose.split('.')[0]!;
    const responder = this.responders.get(strategy);
    if (!responder) return this.kit.unknownPurpose(request);
    const result = withUsage(request, await responder(request, this.kit));
    if (!request.schema) return result as CompletionResult<T>;
    // Data is checked like a real model's: a responder that answers off-schema is a bug to see.
    const parsed = request.schema.zod.safeParse(result.parsed);
    if (!parsed.success) {
      throw new ModelError(`The demo model's "${request.schema.name}" answer does not fit its schema`, { category: 'output', detail: parsed.error.message });
    }
    return { ...result, parsed: parsed.data };
  }
}

/**
 * The demo model's usage, counted as a tokenizer-free estimate (about four characters a token) of
 * what it read and wrote, at no cost: a free model, so the cost chart and the timeline show.
 */
function withUsage<T>(request: CompletionRequest<T>, result: CompletionResult): CompletionResult {
  const read = request.messages.reduce((sum, message) => sum + ('content' in message && typeof message.content === 'string' ? message.content.length : 0), 0);
  const written = result.text.length + result.toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const tokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));
  return { ...result, usage: result.usage ?? { promptTokens: tokens(read), completionTokens: tokens(written) }, costUsd: result.costUsd ?? 0 };
}
