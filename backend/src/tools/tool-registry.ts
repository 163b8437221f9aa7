import { Ajv, type ValidateFunction } from 'ajv';
import { inject, injectable } from 'tsyringe';
import { z } from 'zod';
import type { ToolInfo } from '@stepwise/shared-types';
import type { ApprovalPolicy } from '../config/approval-rules.ts';
import type { Config } from '../config/config.ts';
import { isAbortError, StepwiseError, ToolArgumentsError, ToolExecutionError, ToolNotFoundError } from '../errors.ts';
import type { LlmToolSchema } from '../messages.ts';
import { TOKENS } from '../tokens.ts';
import { abortReason, raceAbort } from '../util/abort.ts';
import { listedPolicy, policyOf } from './approval.ts';
import type { Tool, ToolContext } from './tool.ts';

/** What running one tool call came to. `content` is what the model reads, capped in size. */
export type ToolOutcome =
  | { ok: true; result: unknown; content: string; durationMs: number }
  | { ok: false; error: string; content: string; durationMs: number };

/**
 * How long a stopped call (the run was stopped, or the call timed out) may take to wind down before
 * it is given up. A tool that honours its signal settles well within it; one that ignores it cannot
 * hold the run's ending for longer.
 */
export const TOOL_STOP_GRACE_MS = 3_000;

/** The label of every tool call whose name is no tool of this server's. */
export const OTHER_TOOL = 'other';

/** Every tool a run may enable, by name; validates arguments and runs calls with a timeout. */
@injectable()
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  /**
   * Each tool's function schema, made once: every act call offers the tools again, and turning a
   * zod schema into JSON Schema costs more than the rest of building the request. Dropped with
   * the tool when it is replaced.
   */
  private readonly schemaCache = new Map<string, LlmToolSchema>();
  private readonly listeners: Array<() => void> = [];

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.BuiltinTools) builtins: Tool[],
  ) {
    for (const tool of builtins) this.register(tool);
  }

  register(tool: Tool): void {
    if (this.tools.has(tool.name)) throw new Error(`Tool "${tool.name}" is registered twice`);
    this.tools.set(tool.name, tool);
  }

  /** Replaces every tool of `source` (an MCP server's current tool list). */
  replaceSource(source: string, tools: Tool[]): void {
    if (source === 'builtin') throw new Error('Built-in tools cannot be replaced');
    for (const [name, tool] of this.tools) {
      if (tool.source !== source) continue;
      this.tools.delete(name);
      this.schemaCache.delete(name);
      this.jsonValidators.delete(name);
    }
    for (const tool of tools) {
      if (this.tools.has(tool.name)) continue;
      this.tools.set(tool.name, tool);
    }
    for (const listener of this.listeners) listener();
  }

  /** Told when the set of tools (or whether they are available) changes. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /**
   * A tool's name as a metric label or span name may carry it: the name of a tool this server has
   * (built in, or of a connected MCP server), else `other`. A model may call any name it makes up,
   * and each distinct label value is a series kept for the life of the process.
   */
  label(name: string): string {
    return this.tools.has(name) ? name : OTHER_TOOL;
  }

  /** What the `session` message lists, each tool with its approval policy on this server. */
  list(): ToolInfo[] {
    return [...this.tools.values()].map(({ name, description, source, available, approval }) => ({
      name,
      description,
      source,
      approval: listedPolicy(name, this.config.agent.approval, approval),
      ...(available ? { available: available() } : {}),
    }));
  }

  /** The policy of one call of `name` with `args`: the config file's rules, then the run's own choices, then the tool's hint. */
  policy(name: string, args: Record<string, unknown>, run?: Readonly<Record<string, ApprovalPolicy>>): ApprovalPolicy {
    return policyOf(name, args, { rules: this.config.agent.approval, run, hint: this.tools.get(name)?.approval });
  }

  /**
   * Why `args` do not fit tool `name` (a person's edit of an approval's arguments); undefined when
   * they do. A tool's zod schema checks them, and a tool that brings its own JSON Schema (an MCP
   * server's) is checked against that too.
   */
  checkArguments(name: string, args: Record<string, unknown>): string | undefined {
    const tool = this.tools.get(name);
    if (!tool) return `There is no tool ${name}`;
    const parsed = tool.parameters.safeParse(args);
    if (!parsed.success) {
      return `Invalid arguments for ${name}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`).join('; ')}`;
    }
    if (!tool.jsonSchema) return undefined;
    let validate = this.jsonValidators.get(name);
    if (!validate) {
      try {
        validate = this.ajv.compile(tool.jsonSchema);
      } catch {
        // A schema Ajv cannot compile is the server's to fix; the server checks the call itself.
        return undefined;
      }
      this.jsonValidators.set(name, validate);
    }
    if (validate(args)) return undefined;
    return `Invalid arguments for ${name}: ${(validate.errors ?? []).map((error) => `${error.instancePath.replace(/^\//, '').replaceAll('/', '.') || 'arguments'}: ${error.message ?? 'invalid'}`).join('; ')}`;
  }

  /** JSON Schema validators of the tools that bring their own schema, made on first use. */
  private readonly jsonValidators = new Map<string, ValidateFunction>();
  private readonly ajv = new Ajv({ allErrors: false, strict: false });

  /** The tools a run gets when it names none: every built-in tool. */
  defaultNames(): string[] {
    return [...this.tools.values()].filter((tool) => tool.source === 'builtin').map((tool) => tool.name);
  }

  /** Function schemas for the model, in the order given. They are shared between calls: read them, never change them. */
  schemas(names: readonly string[]): LlmToolSchema[] {
    return names.map((name) => {
      const cached = this.schemaCache.get(name);
      if (cached) return cached;
      const tool = this.tools.get(name);
      if (!tool) throw new ToolNotFoundError(name);
      const { $schema: _ignored, ...parameters } = tool.jsonSchema ?? z.toJSONSchema(tool.parameters, { io: 'input' });
      const schema = { name: tool.name, description: tool.description, parameters };
      this.schemaCache.set(name, schema);
      return schema;
    });
  }

  /** Parses raw JSON arguments the way execute will; for showing them before the call runs. */
  parseArguments(rawArguments: string): Record<string, unknown> {
    if (!rawArguments.trim()) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawArguments);
    } catch {
      throw new ToolArgumentsError('The arguments are not valid JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new ToolArgumentsError('The arguments must be a JSON object');
    }
    return parsed as Record<string, unknown>;
  }

  /**
   * Runs one call of an enabled tool. Never throws for the tool's own faults: they become an
   * outcome the model can read. Rejects only when the run's signal aborts, and then only once the
   * call has settled (or TOOL_STOP_GRACE_MS have passed), so that what it was doing is over before
   * the run's ending is logged. A call is not started once the signal has aborted.
   */
  async execute(call: { name: string; arguments: string }, enabled: ReadonlySet<string>, context: ToolContext): Promise<ToolOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      if (context.signal.aborted) throw abortReason(context.signal);
      const tool = enabled.has(call.name) ? this.tools.get(call.name) : undefined;
      if (!tool) throw new ToolNotFoundError(call.name);
      const parsed = tool.parameters.safeParse(this.parseArguments(call.arguments));
      if (!parsed.success) {
        const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`);
        throw new ToolArgumentsError(`Invalid arguments for ${call.name}: ${issues.join('; ')}`);
      }
      const timeout = AbortSignal.timeout(this.config.tools.timeoutMs);
      const signal = AbortSignal.any([context.signal, timeout]);
      const running = tool.execute(parsed.data, { ...context, signal });
      let result: unknown;
      try {
        result = await raceAbort(running, signal);
      } catch (error) {
        if (signal.aborted) {
          const settled = await settledWithin(running, TOOL_STOP_GRACE_MS);
          if (context.signal.aborted) context.onStopped?.(settled);
        }
        if (timeout.aborted && !context.signal.aborted) {
          throw new ToolExecutionError(`${call.name} timed out after ${this.config.tools.timeoutMs} ms`);
        }
        throw error;
      }
      const capped = this.cap(result);
      return { ok: true, result: capped.result, content: capped.content, durationMs: elapsed() };
    } catch (error) {
      if (isAbortError(error, context.signal)) throw abortReason(context.signal);
      const message = error instanceof StepwiseError ? error.message : `${call.name} failed: ${(error as Error)?.message ?? error}`;
      return { ok: false, error: message, content: `Error: ${message}`, durationMs: elapsed() };
    }
  }

  /** Caps a result so neither the model's context nor the client's socket is flooded. */
  private cap(result: unknown): { result: unknown; content: string } {
    const max = this.config.tools.resultMaxChars;
    const content = typeof result === 'string' ? result : (JSON.stringify(result) ?? 'null');
    if (content.length <= max) return { result: result === undefined ? null : result, content };
    const truncated = `${content.slice(0, max)}… [truncated ${content.length - max} characters]`;
    return { result: truncated, content: truncated };
  }
}

/** Resolves once `promise` has settled (true), or after `ms` (false), whichever comes first; never rejects. */
function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (settled: boolean) => {
      clearTimeout(timer);
      resolve(settled);
    };
    const timer = setTimeout(() => done(false), ms);
    promise.then(
      () => done(true),
      () => done(true),
    );
  });
}
