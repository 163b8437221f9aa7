import type { ApprovalHint } from './approval.ts';
import type { z } from 'zod';

/** What a tool may use while it runs. */
export interface ToolContext {
  /** Aborts when the run stops; long work must give up promptly. */
  signal: AbortSignal;
  sessionId: string;
  runId: string;
  /**
   * Asks the user a question through the run (agent_request_input) and resolves with the answer;
   * for tools that need the user mid-call (MCP elicitation). Rejects on stop and on timeout.
   */
  askUser?: (question: string, signal?: AbortSignal) => Promise<string>;
  /** Told, when the run's stop cut the call short, whether it wound down within TOOL_STOP_GRACE_MS (the stop receipt). */
  onStopped?: (settled: boolean) => void;
  /** Reports how far a long call has got (shown live on its tool card). */
  onProgress?: (progress: { progress: number; total?: number | undefined; message?: string | undefined }) => void;
}

/** The port every tool implements: built-in, and later MCP-backed. */
export interface Tool<Args = unknown> {
  readonly name: string;
  readonly description: string;
  /** Where it comes from: `builtin`, or the MCP server's name. */
  readonly source: string;
  /** Validates arguments before execute is called. */
  readonly parameters: z.ZodType<Args>;
  /** JSON Schema for the model; derived from `parameters` when absent. */
  readonly jsonSchema?: Record<string, unknown>;
  /** Whether a call needs a person's approval before it runs (absent: it runs); the config file and the chat may say otherwise (tools/approval.ts). */
  readonly approval?: ApprovalHint;
  /** False while the tool cannot run (its MCP server is down); absent means always available. */
  readonly available?: () => boolean;
  /** Returns a string or a JSON-serializable value. */
  execute(args: Args, context: ToolContext): Promise<unknown>;
}
