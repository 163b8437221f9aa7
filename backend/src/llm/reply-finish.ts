import type { Config } from '../config/config.ts';
import { ModelError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { CompletionRequest, CompletionResult } from './llm-client.ts';
import { formatCount, shorten } from './model-errors.ts';
import { costOf } from './model-prices.ts';
import type { ReplyAssembler } from './reply-assembler.ts';
import { readTokenUsage } from './token-usage.ts';

/** The assembled reply, its usage checked and priced; a reply past the cap ends with a note saying so. */
export function finishReply(
  assembler: ReplyAssembler,
  request: CompletionRequest,
  how: { streamed: boolean; model: string; requestId: string | undefined },
  { config, logger }: { config: Config; logger: Logger },
): CompletionResult<never> {
  const usage = readTokenUsage(assembler.reportedUsage, (field) =>
    logger.warn({ purpose: request.purpose, field }, 'the model reported an invalid token count; it is ignored'),
  );
  const { text, toolCalls, refusal } = assembler.result();
  if (refusal && !text.trim() && toolCalls.length === 0) {
    throw new ModelError(`The model refused to answer: ${shorten(refusal)}`, { category: 'refusal' });
  }
  const result: CompletionResult<never> = {
    text,
    toolCalls,
    ...(usage ? { usage } : {}),
    model: how.model,
    costUsd: costOf(how.model, usage, config.llm.prices),
    ...(how.requestId ? { requestId: how.requestId } : {}),
    response: {
      ...(assembler.responseId ? { id: assembler.responseId } : {}),
      ...(assembler.responseModel ? { model: assembler.responseModel } : {}),
      ...(assembler.finishReason ? { finishReason: assembler.finishReason } : {}),
    },
  };
  if (assembler.cutAtLimit && !assembler.truncated) {
    logger.warn({ purpose: request.purpose, model: how.model }, "model reply cut at the model's output limit (finish_reason length)");
    // Data is judged by the caller (asked for again); text says it was cut, so it never reads as a whole answer.
    if (request.schema) return { ...result, cutAtLimit: true };
    // A tool call the limit fell in is never run (see ReplyAssembler.result); the text says what happened.
    const note = text.trim()
      ? "\n\n[The reply was cut at the model's output limit]"
      : toolCalls.length > 0
        ? "[The reply was cut at the model's output limit: its last tool call was not run]"
        : "[The reply was cut at the model's output limit before it was complete; nothing of it was run]";
    if (how.streamed) request.onDelta?.(note);
    return { ...result, text: text + note, truncated: true, cutAtLimit: true };
  }
  if (!assembler.truncated) return result;
  const { maxOutputChars } = config.llm;
  logger.warn({ purpose: request.purpose, max_output_chars: maxOutputChars }, 'model reply cut at LLM_MAX_OUTPUT_CHARS');
  if (!text.trim() && toolCalls.length === 0) {
    throw new ModelError(`The model's reply passed ${formatCount(maxOutputChars)} characters (LLM_MAX_OUTPUT_CHARS) before anything usable`);
  }
  const note = `\n\n[Reply cut at ${formatCount(maxOutputChars)} characters: LLM_MAX_OUTPUT_CHARS]`;
  if (how.streamed) request.onDelta?.(note);
  return { ...result, text: text + note, truncated: true };
}
