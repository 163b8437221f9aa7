import type { Attributes, Context, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type { LoggedEvent } from '@stepwise/shared-types';
import type { TracingConfig } from '../config/config.ts';
import { isAbortError, ModelError } from '../errors.ts';
import { aroundCalls, type CompletionRequest, type LlmClient } from '../llm/llm-client.ts';
import type { Logger } from '../logger.ts';
import { traceIdOfRun } from '../util/ids.ts';
import { DEFAULT_STRATEGY } from '../agent/kernel/strategy.ts';
import { responseAttributes } from './model-call-attributes.ts';
import { startOtelSdk } from './otel-setup.ts';
import { tracedLogger } from './traced-logger.ts';
import { type GenAiMetrics, genAiMetrics } from './genai-metrics.ts';

/** Runs as OpenTelemetry traces: what the event log and the model client tell it become spans. */
export interface RunTracing extends CallerTraces {
  /** Sees each event a session logs (the run's span, its branches, its tool calls). */
  observe(event: LoggedEvent, sessionId: string): void;
  /** The model client as runs use it, each call a `chat MODEL` span under its run (or branch). */
  trackModel(llm: LlmClient): LlmClient;
  /** Sends what is left and stops. */
  shutdown(): Promise<void>;
  /** The logger with each line tied to its trace (trace_id, span_id). */
  correlate(logger: Logger): Logger;
}

/**
 * Where a client's own trace context (its `traceparent`, on an AG-UI, A2A or MCP request) goes:
 * the next run of that chat links to it. Without tracing, nowhere.
 */
export interface CallerTraces {
  acceptCaller(sessionId: string, headers: Record<string, string | string[] | undefined>): void;
}

/** CallerTraces while tracing is off. */
export const NO_CALLER_TRACES: CallerTraces = { acceptCaller: () => undefined };

/** What tracing is told about the server it traces. */
export interface TracingOptions {
  provider: string;
  logger: Logger;
  /** The model a call of this purpose goes to. */
  modelFor: (purpose: string) => string;
  /**
   * The name a tool call's span carries: a tool this server has, else one catch-all (see
   * ToolRegistry.label), so that names a model makes up cannot make span names without bound.
   */
  toolLabel: (name: string) => string;
  /** The release (service.version on the resource). */
  version: string;
}

/** The OpenTelemetry API, loaded with the SDK (nothing of it is loaded while tracing is off). */
type Api = typeof import('@opentelemetry/api');

interface RunSpans {
  span: Span;
  context: Context;
  /** A plan step or research task (node_id), or a solver stage ("stage:NAME:LOOP"), while it runs. */
  branches: Map<string, { span: Span; context: Context }>;
  /** Tool calls by id, from tool_start to their result. */
  tools: Map<string, Span>;
  /** The solver stage running now, if any: the parent of its model calls. */
  stage: string | undefined;
}

/**
 * Starts tracing: the OpenTelemetry SDK, configured by the standard OTEL_* variables (see
 * otel-setup.ts) and loaded only now. Each run is a trace whose id is the run's id (so
 * `agent_start.trace_id` is known before its first span ends), with spans named and attributed as
 * the OpenTelemetry GenAI semantic conventions say: `invoke_agent STRATEGY`, `chat MODEL`,
 * `execute_tool TOOL`.
 */
export async function startTracing(config: TracingConfig, options: TracingOptions): Promise<RunTracing> {
  const api = await import('@opentelemetry/api');
  const { RandomIdGenerator } = await import('@opentelemetry/sdk-trace');
  // A run's root span takes the run's own trace id; every other id is random.
  const random = new RandomIdGenerator();
  let nextTraceId: string | undefined;
  const idGenerator = {
    generateTraceId: () => {
      const id = nextTraceId ?? random.generateTraceId();
      nextTraceId = undefined;
      return id;
    },
    generateSpanId: () => random.generateSpanId(),
  };
  const sdk = await startOtelSdk(config, { version: options.version, logger: options.logger, idGenerator });
  options.logger.info({}, 'tracing runs with OpenTelemetry (set up by the OTEL_* variables)');
  return new OtelRunTracing(
    api,
    api.trace.getTracer('stepwise'),
    sdk,
    config,
    options,
    (traceId) => (nextTraceId = traceId),
    genAiMetrics(api.metrics.getMeter('stepwise')),
  );
}

class OtelRunTracing implements RunTracing, CallerTraces {
  private readonly runs = new Map<string, RunSpans>();
  /** Callers' span contexts by chat, waiting for the chat's next run to link to them. */
  private readonly callers = new Map<string, SpanContext>();
  /** Runs lately ended: a straggling event of theirs begins no new trace. */
  private readonly ended = new Set<string>();
  private readonly providerName: string;
  private readonly logger: Logger;
  private readonly modelFor: (purpose: string) => string;
  private readonly toolLabel: (name: string) => string;

  constructor(
    private readonly api: Api,
    private readonly tracer: Tracer,
    private readonly provider: { shutdown(): Promise<void> },
    private readonly config: TracingConfig,
    options: TracingOptions,
    private readonly useTraceId: (traceId: string) => void,
    private readonly metrics: GenAiMetrics,
  ) {
    this.providerName = options.provider;
    this.logger = options.logger;
    this.modelFor = options.modelFor;
    this.toolLabel = options.toolLabel;
  }

  acceptCaller(sessionId: string, headers: Record<string, string | string[] | undefined>): void {
    const context = this.api.propagation.extract(this.api.ROOT_CONTEXT, headers, this.api.defaultTextMapGetter);
    const caller = this.api.trace.getSpanContext(context);
    if (!caller || !this.api.trace.isSpanContextValid(caller)) return;
    this.callers.delete(sessionId);
    this.callers.set(sessionId, caller);
    if (this.callers.size > 1_000) this.callers.delete(this.callers.keys().next().value!);
  }

  observe(event: LoggedEvent, sessionId: string): void {
    const runId = event.run_id;
    if (!runId || this.ended.has(runId)) return;
    const at = Date.parse(event.ts) || Date.now();
    if (event.type === 'response_complete') return this.close(runId, at);
    if (event.type === 'tool_start') {
      const parent = this.parentOf(runId, event.node_id, at);
      const span = this.tracer.startSpan(
        `execute_tool ${this.toolLabel(event.tool_name)}`,
        {
          startTime: at,
          attributes: {
            'gen_ai.operation.name': 'execute_tool',
            // The name as called, cut short: an attribute is no index, but a model may call any name.
            'gen_ai.tool.name': event.tool_name.slice(0, 200),
            'gen_ai.tool.call.id': event.tool_call_id,
            ...(this.config.captureContent ? { 'gen_ai.tool.call.arguments': JSON.stringify(event.arguments) } : {}),
          },
        },
        parent,
      );
      this.run(runId, at).tools.set(event.tool_call_id, span);
      return;
    }
    if (event.type === 'tool_complete' || event.type === 'tool_error') {
      const run = this.runs.get(runId);
      const span = run?.tools.get(event.tool_call_id);
      if (!run || !span) return;
      run.tools.delete(event.tool_call_id);
      if (event.type === 'tool_error') {
        span.setAttribute('error.type', 'tool_error');
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: event.error.slice(0, 500) });
      } else if (this.config.captureContent) {
        span.setAttribute('gen_ai.tool.call.result', JSON.stringify(event.result ?? null).slice(0, 10_000));
      }
      span.end(at);
      return;
    }
    if (event.type !== 'agent_update') return;
    switch (event.update_type) {
      case 'agent_start': {
        const run = this.run(runId, at);
        run.span.updateName(`invoke_agent ${event.strategy ?? DEFAULT_STRATEGY}`);
        // A run keeps its own trace (its id is the run's); the client's span is linked.
        const caller = this.callers.get(sessionId);
        if (caller) {
          this.callers.delete(sessionId);
          run.span.addLink({ context: caller, attributes: { 'stepwise.link': 'caller' } });
        }
        run.span.setAttributes({
          'gen_ai.agent.name': event.strategy ?? DEFAULT_STRATEGY,
          'gen_ai.conversation.id': sessionId,
          'stepwise.max_steps': event.max_steps,
          ...(event.resumed_from ? { 'stepwise.resumed_from': event.resumed_from } : {}),
        });
        return;
      }
      case 'agent_plan_step':
        if (event.status === 'running') this.openBranch(runId, event.node_id ?? String(event.index), `plan_step ${event.index}`, at);
        else this.closeBranch(runId, event.node_id ?? String(event.index), at, event.status === 'failed');
        return;
      case 'agent_task_start':
        this.openBranch(runId, event.node_id ?? event.task_id, `task ${event.task_id}`, at, { 'stepwise.agent': event.agent });
        return;
      case 'agent_task_complete':
        this.closeBranch(runId, event.node_id ?? event.task_id, at, event.status === 'blocked');
        return;
      case 'agent_stage_start': {
        const key = `stage:${event.stage}:${event.loop}`;
        this.openBranch(runId, key, `stage ${event.stage}`, at, { 'stepwise.loop': event.loop });
        this.run(runId, at).stage = key;
        return;
      }
      case 'agent_stage_complete': {
        const key = `stage:${event.stage}:${event.loop}`;
        this.closeBranch(runId, key, at, false);
        const run = this.runs.get(runId);
        if (run?.stage === key) run.stage = undefined;
        return;
      }
      case 'agent_completion':
        return this.ending(runId, event.reason ?? 'answered', at);
      case 'agent_stopped':
        return this.ending(runId, `stopped:${event.reason}`, at);
      case 'agent_error': {
        const run = this.runs.get(runId);
        run?.span.setAttribute('error.type', 'agent_error');
        run?.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: event.message.slice(0, 500) });
        return this.ending(runId, 'failed', at);
      }
      default:
        if (event.node_id && !this.runs.get(runId)?.branches.has(event.node_id)) this.openBranch(runId, event.node_id, `branch ${event.node_id}`, at);
        return;
    }
  }

  trackModel(llm: LlmClient): LlmClient {
    return aroundCalls(llm, async (request, call) => {
      const model = this.modelFor(request.purpose);
      const parent = request.runId ? this.parentOf(request.runId, request.nodeId, Date.now()) : this.api.context.active();
      const span = this.tracer.startSpan(
        `chat ${model}`,
        {
          kind: this.api.SpanKind.CLIENT,
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': this.providerName,
            'gen_ai.request.model': model,
            'stepwise.purpose': request.purpose,
            ...(this.config.captureContent ? { 'gen_ai.input.messages': inputMessages(request) } : {}),
          },
        },
        parent,
      );
      // The model server sees the call's span as its caller (traceparent).
      const started = performance.now();
      const measured: Attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': this.providerName, 'gen_ai.request.model': model };
      const traceHeaders: Record<string, string> = {};
      this.api.propagation.inject(this.api.trace.setSpan(parent, span), traceHeaders, this.api.defaultTextMapSetter);
      try {
        const result = await this.api.context.with(this.api.trace.setSpan(parent, span), () =>
          call({ ...request, traceHeaders: { ...request.traceHeaders, ...traceHeaders } }),
        );
        const response = responseAttributes(result, model);
        span.setAttributes(response);
        this.metrics.record({ ...measured, 'gen_ai.response.model': response['gen_ai.response.model']! }, (performance.now() - started) / 1000, result.usage);
        span.setAttributes({
          ...(this.config.captureContent
            ? {
                'gen_ai.output.messages': JSON.stringify([
                  {
                    role: 'assistant',
                    content: result.text,
                    tool_calls: result.toolCalls.map((toolCall) => ({ name: toolCall.name, arguments: toolCall.arguments })),
                  },
                ]).slice(0, 100_000),
              }
            : {}),
        });
        return result;
      } catch (error) {
        const aborted = isAbortError(error, request.signal);
        const errorType = aborted ? 'cancelled' : error instanceof ModelError ? `model_${error.category ?? 'endpoint'}` : 'internal';
        span.setAttribute('error.type', errorType);
        this.metrics.record({ ...measured, 'error.type': errorType }, (performance.now() - started) / 1000, undefined);
        if (!aborted) span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message.slice(0, 500) : String(error) });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  correlate(logger: Logger): Logger {
    return tracedLogger(logger, this.api);
  }

  async shutdown(): Promise<void> {
    for (const runId of [...this.runs.keys()]) this.close(runId, Date.now());
    // The collector being away costs the last spans, never the shutdown.
    await this.provider.shutdown().catch((error: unknown) => this.logger.warn({ err: error }, 'could not send the last spans and metrics'));
    this.api.context.disable();
  }

  /** The run's spans, its root span begun now (at `at`) when nothing of it was seen yet. */
  private run(runId: string, at: number): RunSpans {
    let run = this.runs.get(runId);
    if (!run) {
      const traceId = traceIdOfRun(runId);
      if (traceId) this.useTraceId(traceId);
      const span = this.tracer.startSpan(
        'invoke_agent',
        { startTime: at, attributes: { 'gen_ai.operation.name': 'invoke_agent', 'stepwise.run_id': runId } },
        this.api.ROOT_CONTEXT,
      );
      run = { span, context: this.api.trace.setSpan(this.api.ROOT_CONTEXT, span), branches: new Map(), tools: new Map(), stage: undefined };
      this.runs.set(runId, run);
    }
    return run;
  }

  /** Where a call of the run belongs: its branch (opened now if need be), the running solver stage, or the run. */
  private parentOf(runId: string, nodeId: string | undefined, at: number): Context {
    if (this.ended.has(runId)) return this.api.ROOT_CONTEXT;
    const run = this.run(runId, at);
    if (nodeId) return (run.branches.get(nodeId) ?? this.openBranch(runId, nodeId, `branch ${nodeId}`, at)).context;
    const stage = run.stage ? run.branches.get(run.stage) : undefined;
    return stage?.context ?? run.context;
  }

  private openBranch(runId: string, key: string, name: string, at: number, attributes: Attributes = {}): { span: Span; context: Context } {
    const run = this.run(runId, at);
    const open = run.branches.get(key);
    if (open) {
      // A branch opened by its first call gets its proper name once its own event says what it is.
      open.span.updateName(name);
      open.span.setAttributes(attributes);
      return open;
    }
    const span = this.tracer.startSpan(name, { startTime: at, attributes: { 'stepwise.node_id': key, ...attributes } }, run.context);
    const branch = { span, context: this.api.trace.setSpan(run.context, span) };
    run.branches.set(key, branch);
    return branch;
  }

  private closeBranch(runId: string, key: string, at: number, failed: boolean): void {
    const branch = this.runs.get(runId)?.branches.get(key);
    if (!branch) return;
    if (failed) branch.span.setStatus({ code: this.api.SpanStatusCode.ERROR });
    branch.span.end(at);
    this.runs.get(runId)!.branches.delete(key);
  }

  private ending(runId: string, ending: string, at: number): void {
    this.runs.get(runId)?.span.setAttribute('stepwise.ending', ending);
    this.close(runId, at);
  }

  /** Ends whatever of the run is still open, the run's span last. */
  private close(runId: string, at: number): void {
    const run = this.runs.get(runId);
    if (!run) return;
    this.runs.delete(runId);
    this.ended.add(runId);
    if (this.ended.size > 10_000) this.ended.delete(this.ended.values().next().value!);
    for (const span of run.tools.values()) span.end(at);
    for (const branch of run.branches.values()) branch.span.end(at);
    run.span.end(at);
  }
}

/** A call's messages as the GenAI conventions' `gen_ai.input.messages` (only with content capture on). */
function inputMessages(request: CompletionRequest<unknown>): string {
  return JSON.stringify(request.messages.map((message) => ({ role: message.role, content: message.content }))).slice(0, 100_000);
}
