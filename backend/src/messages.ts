/**
 * The conversation as every layer sees it: the model adapters send it, the store keeps it, tools
 * and strategies add to it. It sits below llm/, store/ and tools/, so none of them imports another
 * for it. The shape is Chat Completions', which every compatible endpoint speaks.
 */
export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A tool call as the model returned it; `arguments` is the raw JSON text. */
export interface LlmToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A function tool offered to the model. */
export interface LlmToolSchema {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** Tokens a model call used, as the endpoint reported them. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those the endpoint served from its cache (prompt_tokens_details.cached_tokens). */
  cachedTokens?: number;
  /** Of the completion tokens, those spent reasoning (completion_tokens_details.reasoning_tokens). */
  reasoningTokens?: number;
}
