/** One message of a conversation, in the Chat Completions shape every compatible endpoint speaks. */
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

/** What a call is for; adapters may use it for logging, the demo model to decide what to say. */
export type LlmPurpose = 'chat' | 'reason' | 'act' | 'observe';

export interface CompletionRequest {
  messages: LlmMessage[];
  tools?: LlmToolSchema[];
  purpose: LlmPurpose;
  signal: AbortSignal;
  /** Receives streamed text as it arrives. */
  onDelta?: (delta: string) => void;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface CompletionResult {
  text: string;
  toolCalls: LlmToolCall[];
  usage?: TokenUsage;
  /** The reply passed LLM_MAX_OUTPUT_CHARS: the text ends in a note saying so, cut tool calls are left out. */
  truncated?: boolean;
}

/** The port every model adapter implements. */
export interface LlmClient {
  /** The model's name as shown to users. */
  readonly modelName: string;
  /** True for the offline demo stand-in. */
  readonly isDemo: boolean;
  /** One model call. Rejects with ModelError on failure, or with the signal's reason when aborted. */
  complete(request: CompletionRequest): Promise<CompletionResult>;
}
