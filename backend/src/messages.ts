/**
 * The conversation as every layer sees it: the model adapters send it, the store keeps it, tools
 * and strategies add to it. It sits below llm/, store/ and tools/, so none of them imports another
 * for it. The shape is Chat Completions', which every compatible endpoint speaks.
 */
export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; images?: LlmImage[] }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/**
 * An image shown to the model with a user message (sent as an image part, a base64 data URL),
 * already scaled to IMAGE_MAX_SIDE. Images go only with the message they were attached to: the
 * session's history keeps the words, and the file stays in the session under its name.
 */
export interface LlmImage {
  /** The session file it was read from. */
  name: string;
  /** image/png, image/jpeg, image/webp or image/gif. */
  mediaType: string;
  /** The image's bytes, base64. */
  data: string;
}

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
