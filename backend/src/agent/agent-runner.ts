import type { StopReason } from '@stepwise/shared-types';
import { InputTimeoutError, isAbortError, StepwiseError } from '../errors.ts';
import type { LlmClient, LlmMessage, TokenUsage } from '../llm/llm-client.ts';
import type { Logger } from '../logger.ts';
import type { PromptProvider } from '../prompts/prompt-provider.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';
import type { AgentControl } from './agent-control.ts';
import type { EventSink } from './event-sink.ts';
import { type RunEvents, runEvents } from './run-events.ts';
import type { RunContext, RunInput, Strategy } from './strategy.ts';

/** How a run ended, for the session's history and records. */
export type RunOutcome = (
  | { status: 'completed'; answer: string }
  | { status: 'stopped'; reason: StopReason }
  | { status: 'failed'; message: string }
) & { steps: number; transcript: LlmMessage[]; usage: TokenUsage };

/** What a run waiting for the user saves: its input, and the strategy's own state. */
export interface RunCheckpoint {
  input: RunInput;
  state: unknown;
}

export interface RunServices {
  llm: LlmClient;
  tools: ToolRegistry;
  prompts: PromptProvider;
  logger: Logger;
  inputTimeoutMs: number;
  /** The session's files for the reason prompt; '' when none. */
  filesManifest: () => Promise<string>;
  /** The run's budgets: wall-clock time, and tokens (0: none). Beyond either, the run is stopped. */
  budget: { timeoutMs: number; tokens: number };
}

export interface RunHooks {
  /** Persists the outcome; awaited before `response_complete`, so the next message sees it. */
  onEnd?: (outcome: RunOutcome) => Promise<void>;
  /** Persists (or with null, clears) the checkpoint of a run that waits for the user. */
  saveCheckpoint?: (checkpoint: RunCheckpoint | null) => Promise<void>;
  /** Resume from a saved strategy state instead of starting afresh. */
  resume?: unknown;
}

/**
 * Runs one strategy and owns the shared beginning and end of every run: `agent_start`, then
 * exactly one ending (`agent_completion` with the answer, `agent_stopped`, or `agent_error`), then
 * `response_complete`, whatever happened. Never rejects.
 */
export async function executeRun(
  strategy: Strategy,
  input: RunInput,
  control: AgentControl,
  sink: EventSink,
  services: RunServices,
  hooks: RunHooks = {},
): Promise<RunOutcome> {
  const events = runEvents(input.runId);
  const logger = services.logger.child({ run_id: input.runId, strategy: strategy.name });
  const progress = { step: 0, transcript: [] as LlmMessage[] };
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  const overBudget = () => {
    if (services.budget.tokens > 0 && usage.promptTokens + usage.completionTokens > services.budget.tokens) {
      logger.warn({ ...usage, budget: services.budget.tokens }, 'run over its token budget');
      control.stop('token_budget');
    }
  };
  const timer = setTimeout(() => control.stop('timeout'), services.budget.timeoutMs);
  timer.unref?.();
  const context: RunContext = {
    ...services,
    llm: observedModel(services.llm, usage, logger, overBudget),
    logger,
    control,
    sink,
    events,
    progress,
    checkpoints: {
      save: async (state) => hooks.saveCheckpoint?.({ input, state }),
      clear: async () => hooks.saveCheckpoint?.(null),
    },
  };
  const started = performance.now();
  logger.info({ max_steps: input.maxSteps, tools: input.toolNames, resumed: hooks.resume !== undefined }, 'run started');
  let outcome: RunOutcome;
  try {
    if (hooks.resume === undefined) await sink.emit(events.start(input.maxSteps, strategy.name));
    const success = await strategy.run(input, context, hooks.resume);
    const transcript = [...progress.transcript, { role: 'assistant', content: success.answer } as const];
    await sink.emit(events.assistantMessage(success.answer));
    await sink.emit(events.completion(success.steps, success.reason));
    outcome = { status: 'completed', steps: success.steps, answer: success.answer, transcript, usage };
  } catch (error) {
    outcome = { ...(await endEarly(error, control, sink, events, progress.step, logger)), steps: progress.step, transcript: progress.transcript, usage };
  } finally {
    clearTimeout(timer);
  }
  try {
    await hooks.onEnd?.(outcome);
  } catch (error) {
    logger.error({ err: error }, 'could not save the outcome of the run');
  }
  try {
    await sink.emit(events.responseComplete());
  } catch (error) {
    logger.error({ err: error }, 'could not log the end of the run');
  }
  logger.info(
    { status: outcome.status, steps: outcome.steps, duration_ms: Math.round(performance.now() - started), ...usage },
    'run ended',
  );
  return outcome;
}

async function endEarly(
  error: unknown,
  control: AgentControl,
  sink: EventSink,
  events: RunEvents,
  step: number,
  logger: Logger,
): Promise<{ status: 'stopped'; reason: StopReason } | { status: 'failed'; message: string }> {
  try {
    if (isAbortError(error, control.signal) || error instanceof InputTimeoutError) {
      const reason: StopReason = error instanceof InputTimeoutError ? 'input_timeout' : (control.stopReason ?? 'user');
      await sink.emit(events.stopped(reason, step));
      return { status: 'stopped', reason };
    }
    const message = error instanceof StepwiseError && error.expose ? error.message : 'The run failed on an internal error';
    logger[error instanceof StepwiseError ? 'warn' : 'error']({ err: error, step }, 'run failed');
    await sink.emit(events.error(step, message));
    return { status: 'failed', message };
  } catch (sinkError) {
    logger.error({ err: sinkError }, 'could not log the end of the run');
    return { status: 'failed', message: 'The run could not be recorded' };
  }
}

/**
 * The model client as a run sees it: each call's reported token usage adds to `usage` (and is
 * checked against the budget), and each call, one per phase, leaves one log line without contents.
 */
function observedModel(llm: LlmClient, usage: TokenUsage, logger: Logger, checkBudget: () => void): LlmClient {
  return {
    modelName: llm.modelName,
    isDemo: llm.isDemo,
    async complete(request) {
      const started = performance.now();
      const result = await llm.complete(request);
      usage.promptTokens += result.usage?.promptTokens ?? 0;
      usage.completionTokens += result.usage?.completionTokens ?? 0;
      logger.info(
        {
          phase: request.purpose,
          duration_ms: Math.round(performance.now() - started),
          tool_calls: result.toolCalls.length,
          ...(result.usage ? { prompt_tokens: result.usage.promptTokens, completion_tokens: result.usage.completionTokens } : {}),
        },
        'phase done',
      );
      checkBudget();
      return result;
    },
  };
}
