import type { LoggedEvent } from '@stepwise/shared-types';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { isAbortError } from '../errors.ts';
import { aroundCalls, type LlmClient } from '../llm/llm-client.ts';
import { DEFAULT_STRATEGY } from '../agent/kernel/strategy.ts';

/** What the server knows live, read at each scrape. */
export interface LiveCounts {
  /** Agent runs and plain answers in progress on this instance. */
  runsActive: () => number;
  /** Questions runs on this instance are waiting on (request_input, confirmations). */
  questionsWaiting: () => number;
  /** Open WebSocket connections. */
  connections: () => number;
  /** The configured MCP servers and whether each is connected. */
  mcpServers: () => { name: string; up: boolean }[];
}

let processRegistry: Registry | undefined;

/** The process's own metrics (CPU, memory, event loop lag, GC), one set per process, begun at the first scrape. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** The kinds of token `stepwise_model_tokens_total` counts. */
const TOKEN_KINDS = ['prompt', 'completion', 'cached', 'reasoning'] as const;

/**
 * The server's Prometheus metrics (`GET /metrics`), in a registry of its own: runs (from the
 * events every run logs, so each is counted once, on the instance that runs it), model calls
 * (from the model client every run uses), tool calls, sockets, waiting questions, and the
 * process's own (CPU, memory, event loop lag).
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Counter<'strategy' | 'ending'>;
  private readonly modelCalls: Histogram<'purpose' | 'outcome' | 'model'>;
  private readonly tokens: Counter<'kind' | 'model'>;
  private readonly cost: Counter<'model'>;
  private readonly httpRequests: Histogram<'method' | 'route' | 'status'>;
  private readonly answers: Counter<'model'>;
  private readonly fallbacks: Counter<'from' | 'to'>;
  private readonly toolCalls: Histogram<'tool' | 'outcome'>;
  /** Each running run's strategy, from its agent_start, until its ending. */
  private readonly strategies = new Map<string, string>();
  private live: LiveCounts = { runsActive: () => 0, questionsWaiting: () => 0, connections: () => 0, mcpServers: () => [] };

  /** `toolLabel` names a tool call's `tool` label: a known tool's name, else one catch-all (see ToolRegistry.label). */
  constructor(private readonly toolLabel: (name: string) => string) {
    const registers = [this.registry];
    this.runs = new Counter({
      name: 'stepwise_runs_total',
      help: 'Agent runs ended, by strategy and ending (a completion reason such as answered or max_steps, or stopped, or failed)',
      labelNames: ['strategy', 'ending'],
      registers,
    });
    this.modelCalls = new Histogram({
      name: 'stepwise_model_call_duration_seconds',
      help: 'Model calls, from request to the whole reply, by purpose, outcome (ok, error, aborted) and model (the one that answered; the adapter’s for a failed call)',
      labelNames: ['purpose', 'outcome', 'model'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.tokens = new Counter({
      name: 'stepwise_model_tokens_total',
      help: 'Tokens the model endpoint reported, by kind and model',
      labelNames: ['kind', 'model'],
      registers,
    });
    this.cost = new Counter({
      name: 'stepwise_model_cost_usd_total',
      help: 'What model calls cost in USD by the price table, by model (calls of a model with no known price add nothing)',
      labelNames: ['model'],
      registers,
    });
    this.httpRequests = new Histogram({
      name: 'stepwise_http_request_duration_seconds',
      help: 'HTTP requests answered, by method, route (its pattern; unmatched for none) and status class (2xx, 4xx, …)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
    this.answers = new Counter({
      name: 'stepwise_model_answers_total',
      help: 'Model calls answered, by the model that answered (a fallback model counts for itself)',
      labelNames: ['model'],
      registers,
    });
    this.fallbacks = new Counter({
      name: 'stepwise_model_fallbacks_total',
      help: "Model calls a fallback model answered, by the route's first model (from) and the model that answered (to)",
      labelNames: ['from', 'to'],
      registers,
    });
    this.toolCalls = new Histogram({
      name: 'stepwise_tool_call_duration_seconds',
      help: 'Tool calls, by tool and outcome (ok, error)',
      labelNames: ['tool', 'outcome'],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60],
      registers,
    });
    const metrics = this;
    const live = (name: string, help: string, read: (counts: LiveCounts) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read(metrics.live));
        },
      });
    live('stepwise_runs_active', 'Agent runs and plain answers in progress on this instance', (counts) => counts.runsActive());
    live('stepwise_ws_connections', 'Open WebSocket connections', (counts) => counts.connections());
    live('stepwise_questions_waiting', 'Questions runs are waiting on a person to answer', (counts) => counts.questionsWaiting());
    new Gauge({
      name: 'stepwise_mcp_server_up',
      help: 'Each configured MCP server: 1 while connected, 0 otherwise',
      labelNames: ['server'],
      registers,
      collect() {
        this.reset();
        for (const server of metrics.live.mcpServers()) this.set({ server: server.name }, server.up ? 1 : 0);
      },
    });
  }

  /** Where the live gauges read from (set once the server's parts exist). */
  readLiveCounts(counts: LiveCounts): void {
    this.live = counts;
  }

  /** Counts what a logged event says: a run began (its strategy noted), ended, or a tool call finished. */
  readonly observe = (event: LoggedEvent): void => {
    if (event.type === 'tool_complete' || event.type === 'tool_error') {
      if (event.duration_ms !== undefined)
        this.toolCalls.observe({ tool: this.toolLabel(event.tool_name), outcome: event.type === 'tool_complete' ? 'ok' : 'error' }, event.duration_ms / 1000);
      return;
    }
    if (event.type !== 'agent_update' || !event.run_id) return;
    switch (event.update_type) {
      case 'agent_start':
        this.strategies.set(event.run_id, event.strategy ?? DEFAULT_STRATEGY);
        return;
      case 'agent_completion':
        return this.ended(event.run_id, event.reason ?? 'answered');
      case 'agent_stopped':
        return this.ended(event.run_id, 'stopped');
      case 'agent_error':
        return this.ended(event.run_id, 'failed');
      default:
        return;
    }
  };

  /** The model client as runs use it, each call timed by purpose and its tokens counted. */
  trackModel(llm: LlmClient): LlmClient {
    // The adapter's model starts at zero, so a rate over the first tokens has a point to start from.
    for (const kind of TOKEN_KINDS) this.tokens.inc({ kind, model: llm.modelName }, 0);
    return aroundCalls(llm, async (request, call) => {
      const end = this.modelCalls.startTimer({ purpose: request.purpose });
      try {
        const result = await call();
        const { usage } = result;
        const model = result.model ?? llm.modelName;
        end({ outcome: 'ok', model });
        this.answers.inc({ model });
        if (result.fallback) this.fallbacks.inc({ from: result.fallback.from, to: model });
        if (usage) {
          this.tokens.inc({ kind: 'prompt', model }, usage.promptTokens);
          this.tokens.inc({ kind: 'completion', model }, usage.completionTokens);
          if (usage.cachedTokens) this.tokens.inc({ kind: 'cached', model }, usage.cachedTokens);
          if (usage.reasoningTokens) this.tokens.inc({ kind: 'reasoning', model }, usage.reasoningTokens);
        }
        if (result.costUsd) this.cost.inc({ model }, result.costUsd);
        return result;
      } catch (error) {
        end({ outcome: isAbortError(error, request.signal) ? 'aborted' : 'error', model: llm.modelName });
        throw error;
      }
    });
  }

  /** Times one answered HTTP request; `route` is its route's pattern (never the URL, whose ids would make series without end). */
  observeHttp(method: string, route: string | undefined, status: number, seconds: number): void {
    this.httpRequests.observe({ method, route: route ?? 'unmatched', status: `${Math.floor(status / 100)}xx` }, seconds);
  }

  /** The text format Prometheus scrapes: these metrics and the process's. */
  async render(): Promise<{ contentType: string; body: string }> {
    const all = Registry.merge([processMetrics(), this.registry]);
    return { contentType: all.contentType, body: await all.metrics() };
  }

  private ended(runId: string, ending: string): void {
    // A run that went on after a restart logged its agent_start before it: its strategy is not known here.
    const strategy = this.strategies.get(runId) ?? 'unknown';
    this.strategies.delete(runId);
    this.runs.inc({ strategy, ending });
  }
}
