import type { z } from 'zod';

/** What a tool may use while it runs. */
export interface ToolContext {
  /** Aborts when the run stops; long work must give up promptly. */
  signal: AbortSignal;
  sessionId: string;
  runId: string;
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
  /** Returns a string or a JSON-serializable value. */
  execute(args: Args, context: ToolContext): Promise<unknown>;
}
