import type { z } from 'zod';
import type { LlmMessage, LlmToolCall, LlmToolSchema, TokenUsage } from '../messages.ts';

/**
 * Data the model is to answer with: a named zod schema. The openai adapter sends it as structured
 * output (`response_format` json_schema, strict) or, with LLM_STRUCTURED_OUTPUT=false, asks for the
 * JSON in the prompt; either way the reply is parsed leniently, validated, and asked for once more
 * when it does not fit.
 */
export interface OutputSchema<T> {
  /** The schema's name on the wire: plan, plan_viability, orchestrator_decision, task_graph, task_result, verdict, … */
  name: string;
  zod: z.ZodType<T>;
}

export interface CompletionRequest<T = unknown> {
  /**
   * What the call is for, as `STRATEGY.PURPOSE` (`chat`, `roa.reason`, `plan_execute.plan`): sent
   * as X-Stepwise-Purpose, logged, and how the demo model picks its responder.
   */
  purpose: string;
  messages: LlmMessage[];
  tools?: LlmToolSchema[];
  /** Ask for data of this shape; the result's `parsed` holds it, validated. */
  schema?: OutputSchema<T>;
  signal: AbortSignal;
  /** Receives streamed text as it arrives. */
  onDelta?: (delta: string) => void;
  /** The run the call belongs to (X-Stepwise-Run-Id); the kernel fills it in. */
  runId?: string;
  /** The branch of the run (X-Stepwise-Node): a plan step, a research task. */
  nodeId?: string;
  /**
   * The values the call's prompt was rendered from. Real models read the prompt; the demo model
   * reads these instead of parsing prompt wording.
   */
  variables?: Readonly<Record<string, unknown>>;
  /** The call's trace context as W3C headers (`traceparent`, `tracestate`), sent with the request; tracing fills it in. */
  traceHeaders?: Record<string, string>;
}

export interface CompletionResult<T = unknown> {
  text: string;
  toolCalls: LlmToolCall[];
  usage?: TokenUsage;
  /**
   * The reply passed LLM_MAX_OUTPUT_CHARS, or stopped at the model's output limit (finish_reason
   * `length`): the text ends in a note saying so, cut tool calls are left out.
   */
  truncated?: boolean;
  /** The endpoint stopped the reply at the model's output limit (finish_reason `length`). */
  cutAtLimit?: boolean;
  /** With a `schema`: the reply as that data, validated. */
  parsed?: T;
  /** The model that answered (the call's purpose may route it to another than LLM_MODEL). */
  model?: string;
  /** What the call cost in USD by the price table; null when the model's price is unknown. */
  costUsd?: number | null;
  /** The endpoint's x-request-id, for matching a call with the provider's logs. */
  requestId?: string;
  /** What the response itself said: its id, the model it names (a dated version, say), why it finished. */
  response?: { id?: string; model?: string; finishReason?: string };
  /** The call went to a fallback: the model it was meant for, and each model that failed before `model` answered. */
  fallback?: { from: string; failures: Array<{ model: string; reason: string }> };
  /**
   * The messages people sent a run that this call read (they went with it as user turns, after its
   * messages), live or as the run's past read them; set by the run's model, never by an adapter.
   */
  steers?: Array<{ id: string; content: string; nodeId?: string | undefined; delivery: 'steer' | 'interrupt' }>;
}

/** The port every model adapter implements. */
export interface LlmClient {
  /** The model's name as shown to users. */
  readonly modelName: string;
  /** True for the offline demo stand-in. */
  readonly isDemo: boolean;
  /**
   * One model call. Rejects with ModelError on failure (also when data asked for never fitted its
   * schema), or with the signal's reason when aborted. With a schema, `parsed` is always set.
   */
  complete<T = unknown>(request: CompletionRequest<T>): Promise<CompletionResult<T>>;
}

/** What a decorator does about one call: `call` makes it (with the request changed, if given); the result (or the failure) passes through. */
export type AroundCall = <T>(
  request: CompletionRequest<T>,
  call: (changed?: CompletionRequest<T>) => Promise<CompletionResult<T>>,
) => Promise<CompletionResult<T>>;

/** The client with `around` about each of its calls (health, metrics, tracing), the rest unchanged. */
export function aroundCalls(llm: LlmClient, around: AroundCall): LlmClient {
  // Read through: the model and whether it is the demo change when an admin changes the settings.
  return {
    get modelName() {
      return llm.modelName;
    },
    get isDemo() {
      return llm.isDemo;
    },
    complete: (request) => around(request, (changed = request) => llm.complete(changed)),
  };
}

export type { LlmImage, LlmMessage, LlmToolCall, LlmToolSchema, TokenUsage } from '../messages.ts';

/** What the demo model lends its responders: streaming text as a model would, a pause, a refusal. */
export interface DemoKit {
  say(text: string, request: CompletionRequest<unknown>): Promise<CompletionResult<never>>;
  pause(signal: AbortSignal): Promise<void>;
  unknownPurpose(request: CompletionRequest<unknown>): never;
}

/**
 * The demo model's answers to one strategy's calls (by `request.purpose`). A call with a schema
 * must come back with `parsed` set.
 */
export type DemoResponder = (request: CompletionRequest<unknown>, demo: DemoKit) => Promise<CompletionResult<unknown>>;
