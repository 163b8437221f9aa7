import type { DeltaEvent, LoggedEventBody, StopReason, StoppedCall, StrategyInfo, ToolProgressEvent } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { z } from 'zod';
import type { Config } from '../../config/config.ts';
import { CostBudgetReached, InputTimeoutError, isAbortError, ModelError, StepwiseError, toClientError } from '../../errors.ts';
import type { CompletionRequest, CompletionResult, LlmClient } from '../../llm/llm-client.ts';
import { jsonSchemaOf } from '../../llm/structured-output.ts';
import type { Logger } from '../../logger.ts';
import type { LlmImage, LlmMessage, TokenUsage } from '../../messages.ts';
import type { PromptProvider, PromptSet } from '../../prompts/prompt-provider.ts';
import { TOKENS } from '../../tokens.ts';
import { ToolRegistry } from '../../tools/tool-registry.ts';
import { traceIdOfRun } from '../../util/ids.ts';
import type { AgentControl } from './agent-control.ts';
import type { EventSink } from './event-sink.ts';
import { type FailedCall, groundedEnding, watchedSink } from './grounding.ts';
import { type RunEvents, runEvents, type RunTotals } from './run-events.ts';
import { type BudgetHold, type CallSpending, RunSpending } from './run-spending.ts';
import { JOURNAL, JournalReplay, journaledTools, ReplaySink, type RunJournal, type RunPast } from './run-journal.ts';
import { type AnyStrategy, DEFAULT_STRATEGY, type Run, type RunFiles, type RunInput, type RunProgress, type StrategySessionHooks } from './strategy.ts';

/** How a run ended, for the session's history and records. */
export type RunOutcome = ({ status: 'completed'; answer: string } | { status: 'stopped'; reason: StopReason } | { status: 'failed'; message: string }) & {
  steps: number;
  transcript: LlmMessage[];
  usage: TokenUsage;
  costUsd?: number | null;
};

/** The session a run belongs to: its controls, where its events go, its files. */
export interface RunSession {
  control: AgentControl;
  sink: EventSink;
  /** The session's files for prompts; '' when none. */
  filesManifest: () => Promise<string>;
  /** The session's notepad; '' when empty. */
  notepad?: () => Promise<string>;
  /** The session's files; absent (unit tests), a run keeps them in memory. */
  files?: RunFiles;
  /** Reads the session images a message was sent with, scaled for the model. */
  images?: (names: readonly string[]) => Promise<LlmImage[]>;
}

export interface RunHooks {
  /** Persists the outcome; awaited before `response_complete`, so the next message sees it. */
  onEnd?: (outcome: RunOutcome) => Promise<void>;
  /**
   * Go on from a past: this run's own (after a restart) or the run it continues. Its journaled
   * effects are replayed, not done again; its logged events are not logged again.
   */
  past?: RunPast & {
    /** How many messages of the past's transcript the session's history holds already. */
    storedMessages: number;
  };
  /** Where this run's effects are recorded, instead of the kernel's journal (a durable engine's). */
  journal?: RunJournal;
}

/** Options checked against a strategy's schema: the values with defaults, or what is wrong, by name. */
export type OptionsCheck = { ok: true; options: Record<string, unknown> } | { ok: false; message: string };

interface Loaded {
  definition: AnyStrategy;
  prompts: PromptSet;
}

/**
 * The runtime every strategy shares. It knows the strategies (their prompts are loaded, so checked,
 * when it is built: at startup), validates their options, and runs them: it owns the beginning and
 * the end of every run (`agent_start`, then exactly one ending, then `response_complete`, whatever
 * happened), its budgets (wall clock, tokens), and the model as a run sees it (usage counted, the
 * run's id on every request).
 */
@injectable()
export class RunKernel {
  private readonly strategies = new Map<string, Loaded>();

  constructor(
    @inject(TOKENS.Strategies) definitions: AnyStrategy[],
    @inject(TOKENS.LlmClient) private readonly llm: LlmClient,
    @inject(ToolRegistry) private readonly tools: ToolRegistry,
    @inject(TOKENS.PromptProvider) prompts: PromptProvider,
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) private readonly logger: Logger,
    @inject(TOKENS.RunJournal) private readonly journal: RunJournal,
  ) {
    for (const definition of definitions) {
      if (this.strategies.has(definition.name)) throw new Error(`Two strategies are named "${definition.name}"`);
      this.strategies.set(definition.name, { definition, prompts: prompts.load(definition.name, definition.prompts) });
    }
  }

  /** The strategies offered to users, by name. */
  get names(): string[] {
    return [...this.strategies.values()].filter(({ definition }) => !definition.hidden).map(({ definition }) => definition.name);
  }

  has(name: string): boolean {
    return this.strategies.has(name);
  }

  /** What strategy `name` adds to a session (see StrategySessionHooks). */
  sessionHooks(name: string): StrategySessionHooks | undefined {
    return this.strategies.get(name)?.definition.session;
  }

  /** Every strategy's file checks, by file name. */
  fileChecks(): [string, (text: string) => void][] {
    return [...this.strategies.values()].flatMap(({ definition }) => Object.entries(definition.session?.fileChecks ?? {}));
  }

  /** The strategy that takes client messages of this type, with its handler. */
  clientMessageHandler(type: string): NonNullable<StrategySessionHooks['clientMessages']>[string] | undefined {
    for (const { definition } of this.strategies.values()) {
      const handler = definition.session?.clientMessages?.[type];
      if (handler) return handler;
    }
    return undefined;
  }

  /** What `session` lists: each offered strategy with the JSON Schema of its options. */
  catalog(): StrategyInfo[] {
    return [...this.strategies.values()]
      .filter(({ definition }) => !definition.hidden)
      .map(({ definition }) => ({
        name: definition.name,
        label: definition.label,
        description: definition.description,
        options_schema: jsonSchemaOf(definition.options as z.ZodType, 'input'),
      }));
  }

  /** Checks a chat message's `strategy_options` against the strategy's schema. */
  checkOptions(name: string, raw: Record<string, unknown> | undefined): OptionsCheck {
    const definition = this.strategies.get(name)?.definition;
    if (!definition) return { ok: false, message: `Unknown strategy "${name}"` };
    const parsed = (definition.options as z.ZodType<Record<string, unknown>>).safeParse(raw ?? {});
    if (parsed.success) return { ok: true, options: parsed.data };
    const issue = parsed.error.issues[0]!;
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const option = keys.length ? keys.join(', ') : issue.path.join('.');
    return { ok: false, message: `strategy_options.${option || '(options)'}: ${issue.message}` };
  }

  /** Runs `input` with its strategy to its one ending. Never rejects. */
  async execute(input: RunInput, session: RunSession, hooks: RunHooks = {}): Promise<RunOutcome> {
    const loaded = this.strategies.get(input.strategy ?? DEFAULT_STRATEGY);
    if (!loaded) throw new Error(`Unknown strategy "${input.strategy}"`);
    const { definition } = loaded;
    const chatWire = definition.wire === 'chat';
    const { control } = session;
    const past = hooks.past;
    // After a restart the run goes on under its own id: its agent_start is logged already.
    const samePast = past?.runId === input.runId;
    const journal = hooks.journal ?? this.journal;
    const logged = past ? new ReplaySink(session.sink, past.events) : session.sink;
    // Events never reach the log ahead of the journal entries recorded before them: the store's
    // journal commits with them, in order; another (Restate's) is waited for.
    const journaledSink = journal.commitsWithEvents ? logged : new AfterJournalSink(logged, () => replay.appendsSoFar());
    // Every failed tool call is noted: an answer that rests on one is not a success.
    const failures: FailedCall[] = [];
    const sink = watchedSink(journaledSink, (failure) => failures.push(failure));
    const events = runEvents(chatWire ? undefined : input.runId);
    const logger = this.logger.child({ session_id: input.sessionId, run_id: input.runId, strategy: definition.name });
    const progress: RunProgress = { step: 0, transcript: [] as LlmMessage[] };
    // What the session's history holds already (a continued run's past) is not saved again.
    const added = () => progress.transcript.slice(past?.storedMessages ?? 0);
    const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
    // Its cost and token totals: agent_usage after each call, and on the run's ending event.
    const spending = new RunSpending(usage);
    // A call a fallback model answered is said in its step (plain chat's wire has no steps: its log line says it).
    const onFallback = async (purpose: string, result: CompletionResult<unknown>, nodeId: string | undefined) => {
      if (chatWire || !result.fallback || !result.model) return;
      await sink.emit((nodeId ? events.node(nodeId) : events).modelFallback(progress.step, purpose, { model: result.model, ...result.fallback }));
    };
    const onSpent = async (call: CallSpending, nodeId: string | undefined) => {
      if (!chatWire) await sink.emit((nodeId ? events.node(nodeId) : events).usage(call));
    };
    const tokenBudget = this.config.agent.runTokenBudget;
    const timeoutMs = chatWire ? this.config.limits.chatTimeoutMs : this.config.agent.runTimeoutMs;
    const overBudget = () => {
      if (tokenBudget > 0 && usage.promptTokens + usage.completionTokens > tokenBudget) {
        logger.warn({ ...usage, budget: tokenBudget }, 'run over its token budget');
        control.stop('token_budget');
      }
    };
    // The cost budget (max_cost_usd): each new model call holds its share of it while in flight
    // (so parallel branches share it); with no known price it cannot hold, which the log says once.
    let unpriced = false;
    const costBudget = async (signal: AbortSignal): Promise<BudgetHold | undefined> => {
      const budget = input.maxCostUsd;
      if (budget === undefined) return undefined;
      const check = await spending.reserve(budget, signal);
      switch (check.kind) {
        case 'go':
          return check.hold;
        case 'over':
          throw new CostBudgetReached(budget, check.spentUsd);
        case 'unpriced':
          if (!unpriced) {
            unpriced = true;
            logger.warn({ budget_usd: budget }, 'the run has a cost budget but its model has no known price: the budget cannot be enforced');
          }
          return undefined;
        default: {
          const unknown: never = check;
          throw new Error(`Unknown budget check ${String(unknown)}`);
        }
      }
    };
    const timer = setTimeout(() => control.stop('timeout'), timeoutMs);
    timer.unref?.();
    // Several users: who answered each question is logged, before the run goes on with the answer.
    control.onAnswered = (questionId, by) =>
      void sink.emit(events.inputReceived(questionId, by)).catch((error: unknown) => logger.warn({ err: error }, 'could not log who answered'));
    const options = input.options ?? (this.checkOptions(definition.name, {}) as { options: Record<string, unknown> }).options ?? {};
    const replay = new JournalReplay(journal, input.runId, past, () => progress.step);
    // What a run changes in the world waits until the model call that asked for it is committed.
    const runFiles = session.files ?? memoryFiles();
    const run: Run = {
      input,
      options,
      llm: observedModel(this.llm, {
        runId: input.runId,
        replay,
        countReplayed: samePast,
        spending,
        onSpent,
        onFallback,
        logger,
        checkBudget: overBudget,
        beforeCall: costBudget,
      }),
      tools: journaledTools(this.tools, replay, logger),
      prompts: loaded.prompts,
      control,
      sink,
      events,
      progress,
      inputTimeoutMs: this.config.agent.inputTimeoutMs,
      approvalTimeoutAction: this.config.agent.approvalTimeoutAction,
      filesManifest: session.filesManifest,
      notepad: session.notepad ?? (async () => ''),
      files: {
        read: (name) => runFiles.read(name),
        write: async (name, content) => {
          await replay.settled();
          return runFiles.write(name, content);
        },
      },
      logger,
      effects: {
        once: (kind, key, live) => replay.once(kind, key, live, { afterCommitted: true }),
        has: (kind, key) => replay.has(kind, key),
        continues: past !== undefined && !samePast,
      },
    };
    const started = performance.now();
    logger.debug({ max_steps: input.maxSteps, tools: input.toolNames, past: past?.runId, entries: past?.entries.length }, 'run started');
    let outcome: RunOutcome;
    try {
      if (!samePast) {
        // agent_start first: a restart finds a run whose input is journaled already started.
        if (!chatWire) {
          // With tracing on, the run's trace id (its own id's digits) says where to find its trace.
          const traceId = this.config.tracing ? traceIdOfRun(input.runId) : undefined;
          await session.sink.emit(events.start(input.maxSteps, definition.name, { options, tools: input.toolNames, resumedFrom: past?.runId, traceId }));
        }
        const { history: _history, ...journaled } = input;
        await replay.recordInput(journaled);
      }
      // The images go with the question; one that is gone or broken ends the run before any call.
      if (input.images?.length) {
        if (!session.images) throw new Error('This run cannot read images');
        run.images = await session.images(input.images);
      }
      const success = chatWire ? await definition.run(run) : groundedEnding(await definition.run(run), failures);
      const transcript = [...added(), { role: 'assistant', content: success.answer } as const];
      await sink.emit(events.assistantMessage(success.answer));
      if (!chatWire) await sink.emit(events.completion(success.steps, success.reason, spending.totals(), success.summary));
      // Everything the run recorded is committed before its outcome is saved.
      await replay.settled();
      await sink.flush();
      outcome = { status: 'completed', steps: success.steps, answer: success.answer, transcript, usage, costUsd: spending.totals().cost_usd };
    } catch (error) {
      if (control.handedOver && isAbortError(error, control.signal)) {
        // Handed to another instance: nothing ends here; the run's record stays running for it, with all it wrote.
        clearTimeout(timer);
        await Promise.allSettled([replay.settled(), sink.flush()]);
        logger.info({ step: progress.step }, 'run handed over to another instance');
        return { status: 'stopped', reason: 'shutdown', steps: progress.step, transcript: added(), usage };
      }
      if (error instanceof CostBudgetReached && !chatWire) {
        // Not a failure: the run did what its budget allowed, and may be continued with a larger one.
        const answer = `I stopped before my next model call: it would pass this run's cost budget of $${error.budgetUsd} (spent so far: $${error.spentUsd}). Continue the run with a larger budget to go on.`;
        await sink.emit(events.assistantMessage(answer));
        await sink.emit(events.completion(progress.step, 'budget', spending.totals()));
        await sink.flush();
        outcome = {
          status: 'completed',
          steps: progress.step,
          answer,
          transcript: [...added(), { role: 'assistant', content: answer }],
          usage,
          costUsd: spending.totals().cost_usd,
        };
      } else {
        const ending = await this.endEarly(error, {
          control,
          sink,
          events,
          step: progress.step,
          logger,
          chatWire,
          timeoutMs,
          totals: spending.totals(),
          calls: progress.stoppedCalls,
        });
        outcome = { ...ending, steps: progress.step, transcript: added(), usage, costUsd: spending.totals().cost_usd };
      }
    } finally {
      clearTimeout(timer);
    }
    // Whatever the ending, everything the run recorded is committed before its outcome is saved.
    await replay.settled().catch((error: unknown) => logger.error({ err: error }, 'a journal entry of the run could not be saved'));
    await sink.flush().catch((error: unknown) => logger.error({ err: error }, 'an event of the run could not be saved'));
    try {
      await hooks.onEnd?.(outcome);
    } catch (error) {
      logger.error({ err: error }, 'could not save the outcome of the run');
    }
    try {
      await sink.emit(events.responseComplete());
      await sink.flush();
    } catch (error) {
      logger.error({ err: error }, 'could not log the end of the run');
    }
    logger.info({ status: outcome.status, steps: outcome.steps, duration_ms: Math.round(performance.now() - started), ...usage }, 'run ended');
    return outcome;
  }

  /** Logs the one ending of a run that was stopped or failed. */
  private async endEarly(
    error: unknown,
    run: {
      control: AgentControl;
      sink: EventSink;
      events: RunEvents;
      step: number;
      logger: Logger;
      chatWire: boolean;
      timeoutMs: number;
      totals: RunTotals;
      calls?: StoppedCall[] | undefined;
    },
  ): Promise<{ status: 'stopped'; reason: StopReason } | { status: 'failed'; message: string }> {
    const { control, sink, events, step, logger, chatWire } = run;
    try {
      if (isAbortError(error, control.signal) || error instanceof InputTimeoutError) {
        const reason: StopReason = error instanceof InputTimeoutError ? 'input_timeout' : (control.stopReason ?? 'user');
        if (!chatWire) await sink.emit(events.stopped(reason, step, run.totals, run.calls, reason === 'user' ? control.stoppedBy : undefined));
        else if (reason === 'timeout') {
          await sink.emit(events.failed('timeout', `The answer took longer than ${Math.round(run.timeoutMs / 1000)} s (CHAT_TIMEOUT_MS) and was stopped`));
        } else if (reason === 'token_budget') {
          await sink.emit(events.failed('timeout', 'The answer used more tokens than a run may (AGENT_RUN_TOKEN_BUDGET) and was stopped'));
        }
        await sink.flush();
        return { status: 'stopped', reason };
      }
      const { code, message } = toClientError(error);
      logger[error instanceof StepwiseError ? 'warn' : 'error']({ err: error, step }, 'run failed');
      await sink.emit(chatWire ? events.failed(code, message) : events.error(step, message, run.totals));
      await sink.flush();
      return { status: 'failed', message };
    } catch (sinkError) {
      logger.error({ err: sinkError }, 'could not log the end of the run');
      return { status: 'failed', message: 'The run could not be recorded' };
    }
  }
}

/**
 * The model as a run sees it: every request carries the run's id; each call is journaled (keyed
 * by its purpose and branch), so a call the run's past made is not made again; each call's
 * reported token usage adds to `usage` (a continued run's past is the other run's spending) and is
 * checked against the budget; each call leaves a debug line.
 */
function observedModel(
  llm: LlmClient,
  run: {
    runId: string;
    replay: JournalReplay;
    countReplayed: boolean;
    spending: RunSpending;
    onSpent: (call: CallSpending, nodeId: string | undefined) => Promise<void>;
    onFallback: (purpose: string, result: CompletionResult<unknown>, nodeId: string | undefined) => Promise<void>;
    logger: Logger;
    checkBudget: () => void;
    /**
     * Waits until the call about to be made fits the run's cost budget beside the calls in flight,
     * and returns its hold on it; throws CostBudgetReached when it would pass the budget.
     */
    beforeCall?: (signal: AbortSignal) => Promise<BudgetHold | undefined>;
  },
): LlmClient {
  const { runId, replay, spending, logger, checkBudget } = run;
  return {
    modelName: llm.modelName,
    isDemo: llm.isDemo,
    async complete<T>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
      const started = performance.now();
      const key = request.nodeId ? `${request.purpose}@${request.nodeId}` : request.purpose;
      let hold: BudgetHold | undefined;
      let outcome: { value: CompletionResult<T>; replayed: boolean };
      try {
        outcome = await replay.once(JOURNAL.model, key, async () => {
          // A call the run's past made is read back; a new one is made only within the cost budget.
          hold = await run.beforeCall?.(request.signal);
          try {
            return await llm.complete({ ...request, runId });
          } catch (error) {
            // Replies the call received and could not use (data off its schema, cut at the output limit) were spent all the same.
            if (error instanceof ModelError && error.spent) {
              const spent = spending.add(request.purpose, llm.modelName, { text: '', toolCalls: [], ...error.spent });
              hold?.release();
              if (spent) await run.onSpent(spent, request.nodeId);
              // Past the token budget with them, the run ends so rather than asking again.
              checkBudget();
            }
            throw error;
          }
        });
        // The call's cost is added before its hold is given back, so a call waiting for it sees one or the other.
        if (!outcome.replayed || run.countReplayed) {
          const spent = spending.add(request.purpose, llm.modelName, outcome.value);
          hold?.release();
          if (spent) await run.onSpent(spent, request.nodeId);
        }
      } finally {
        hold?.release();
      }
      const { value: result, replayed } = outcome;
      if (!replayed) await run.onFallback(request.purpose, result, request.nodeId);
      if (logger.isLevelEnabled?.('debug') ?? true) {
        logger.debug(
          {
            purpose: request.purpose,
            replayed,
            ...(request.nodeId ? { node_id: request.nodeId } : {}),
            duration_ms: Math.round(performance.now() - started),
            tool_calls: result.toolCalls.length,
            ...(result.usage ? { prompt_tokens: result.usage.promptTokens, completion_tokens: result.usage.completionTokens } : {}),
            ...(result.model ? { model: result.model } : {}),
            ...(result.requestId ? { request_id: result.requestId } : {}),
          },
          'model call done',
        );
      }
      checkBudget();
      return result;
    },
  };
}

/**
 * A run's sink when its journal commits apart from the store (Restate): each event waits for the
 * journal entries recorded before it, so that nothing is shown that a replay would not find
 * recorded; previews and progress keep their place behind the events still waiting.
 */
class AfterJournalSink implements EventSink {
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly sink: EventSink,
    private readonly journaled: () => Promise<void>,
  ) {}

  emit(event: LoggedEventBody): Promise<void> {
    const before = this.journaled();
    this.after(async () => {
      await before;
      await this.sink.emit(event);
    });
    const failure = this.failure;
    this.failure = undefined;
    return failure ? Promise.reject(failure.error) : Promise.resolve();
  }

  async flush(): Promise<void> {
    await this.chain;
    const failure = this.failure;
    this.failure = undefined;
    if (failure) throw failure.error;
    await this.sink.flush();
  }

  preview(delta: DeltaEvent): void {
    if (this.waiting === 0) this.sink.preview(delta);
    else this.after(async () => this.sink.preview(delta));
  }

  progress(event: ToolProgressEvent): void {
    if (this.waiting === 0) this.sink.progress(event);
    else this.after(async () => this.sink.progress(event));
  }

  private after(step: () => Promise<void>): void {
    this.waiting++;
    this.chain = this.chain
      .then(step)
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.waiting--);
  }
}

/** Files kept in memory for one run: for kernels without a session folder (unit tests). */
function memoryFiles(): RunFiles {
  const files = new Map<string, string>();
  return {
    read: async (name) => files.get(name),
    write: async (name, content) => void files.set(name, content),
  };
}
