import type { Attributes } from '@opentelemetry/api';
import type { CompletionResult } from '../llm/llm-client.ts';

/**
 * What a model call's span says of its response, as the GenAI semantic conventions name it: the
 * model the response names (a dated version, say; else the model asked for), its id, why it
 * finished, and the tokens it reports (cached input tokens and reasoning tokens among them).
 */
export function responseAttributes(result: CompletionResult<unknown>, requested: string): Attributes {
  const { response, usage } = result;
  return {
    'gen_ai.response.model': response?.model ?? result.model ?? requested,
    ...(response?.id ? { 'gen_ai.response.id': response.id } : {}),
    ...(response?.finishReason ? { 'gen_ai.response.finish_reasons': [response.finishReason] } : {}),
    ...(usage
      ? {
          'gen_ai.usage.input_tokens': usage.promptTokens,
          'gen_ai.usage.output_tokens': usage.completionTokens,
          ...(usage.cachedTokens ? { 'gen_ai.usage.cache_read.input_tokens': usage.cachedTokens } : {}),
          ...(usage.reasoningTokens ? { 'gen_ai.usage.reasoning.output_tokens': usage.reasoningTokens } : {}),
        }
      : {}),
  };
}
