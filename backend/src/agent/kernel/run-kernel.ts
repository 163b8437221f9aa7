import type { StrategyInfo } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { z } from 'zod';
import type { Config } from '../../config/config.ts';
import type { LlmClient } from '../../llm/llm-client.ts';
import { jsonSchemaOf } from '../../llm/structured-output.ts';
import type { Logger } from '../../logger.ts';
import type { PromptProvider, PromptSet } from '../../prompts/prompt-provider.ts';
import { TOKENS } from '../../tokens.ts';
import { ToolRegistry } from '../../tools/tool-registry.ts';
import { traceIdOfRun } from '../../util/ids.ts';
import { groundedEnding } from './grounding.ts';
import { type Ending, endingOf, type ParkedRun, type RunOutcome, writeEnding } from './run-ending.ts';
import type { RunJournal } from './run-journal.ts';
import { type KernelPast, type KernelServices, openRun, type RunScope, type RunSession } from './run-scope.ts';
import { type AnyStrategy, DEFAULT_STRATEGY, type RunInput, type StrategySessionHooks } from './strategy.ts';

export type { RunOutcome, RunSession };

export interface RunHooks {
  /** Persists the outcome; awaited before `response_complete`, so the next message sees it. */
  onEnd?: (outcome: RunOutcome) => Promise<void>;
  /** Persists a parked run (see ParkedRun): awaited before the run lets go of what it holds. */
  onPark?: (parked: ParkedRun) => Promise<void>;
  /**
   * Go on from a past: this run's own (after a restart) or the run it continues. Its journaled
   * effects are replayed, not done again; its logged events are not logged again.
   */
  past?: KernelPast;
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

  private readonly services: KernelServices;

  constructor(
    @inject(TOKENS.Strategies) definitions: AnyStrategy[],
    @inject(TOKENS.LlmClient) llm: LlmClient,
    @inject(ToolRegistry) tools: ToolRegistry,
    @inject(TOKENS.PromptProvider) prompts: PromptProvider,
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Logger) logger: Logger,
    @inject(TOKENS.RunJournal) journal: RunJournal,
  ) {
    this.services = { llm, tools, config, logger, journal };
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

  /**
   * Runs `input` with its strategy to its one ending: it begins (agent_start, its input journaled,
   * its images read), its strategy runs within its budgets, and however that ends (see Ending) is
   * written once, saved, and followed by response_complete. Never rejects.
   */
  async execute(input: RunInput, session: RunSession, hooks: RunHooks = {}): Promise<RunOutcome> {
    const loaded = this.strategies.get(input.strategy ?? DEFAULT_STRATEGY);
    if (!loaded) throw new Error(`Unknown strategy "${input.strategy}"`);
    const options = input.options ?? (this.checkOptions(loaded.definition.name, {}) as { options: Record<string, unknown> }).options ?? {};
    const scope = openRun(this.services, { ...loaded, options }, input, session, hooks);
    const started = performance.now();
    scope.logger.debug({ max_steps: input.maxSteps, tools: input.toolNames, past: hooks.past?.runId, entries: hooks.past?.entries.length }, 'run started');
    scope.budgets.watchClock(scope.timeoutMs);
    let ending: Ending;
    try {
      await this.begin(scope, session, hooks.past?.runId);
      const success = await loaded.definition.run(scope.run);
      // Plain chat claims nothing from tools; an agent's answer is grounded in what its tools returned.
      ending = { kind: 'completed', success: scope.chatWire ? success : groundedEnding(success, scope.failures) };
    } catch (error) {
      ending = endingOf(error, scope);
    } finally {
      scope.budgets.stop();
    }
    const outcome = await writeEnding(ending, scope);
    if (outcome.status === 'parked')
      await hooks.onPark?.(outcome.parked).catch((error: unknown) => scope.logger.error({ err: error }, 'could not save the parked run'));
    else if (ending.kind !== 'handed_over') await this.finish(scope, outcome, hooks);
    scope.logger.info({ status: outcome.status, steps: outcome.steps, duration_ms: Math.round(performance.now() - started), ...scope.usage }, 'run ended');
    return outcome;
  }

  /** agent_start first (a restart finds a run whose input is journaled already started), then the input journaled, then the images read. */
  private async begin(scope: RunScope, session: RunSession, resumedFrom: string | undefined): Promise<void> {
    const { run, events } = scope;
    const { input } = run;
    if (!scope.samePast) {
      if (!scope.chatWire) {
        // With tracing on, the run's trace id (its own id's digits) says where to find its trace.
        const traceId = this.config.tracing ? traceIdOfRun(input.runId) : undefined;
        const fromMessage = input.messageId ? { id: input.messageId, question: input.question } : undefined;
        const start = events.start(input.maxSteps, input.strategy ?? DEFAULT_STRATEGY, {
          options: run.options,
          tools: input.toolNames,
          resumedFrom,
          traceId,
          fromMessage,
        });
        await session.sink.emit(start);
      }
      const { history: _history, ...journaled } = input;
      await scope.replay.recordInput(journaled);
    }
    // The images go with the question; one that is gone or broken ends the run before any call.
    if (input.images?.length) {
      if (!session.images) throw new Error('This run cannot read images');
      run.images = await session.images(input.images);
    }
  }

  /** Whatever the ending, everything the run recorded is committed before its outcome is saved; then response_complete. */
  private async finish(scope: RunScope, outcome: RunOutcome, hooks: RunHooks): Promise<void> {
    const { sink, events, logger } = scope;
    await scope.settled().catch((error: unknown) => logger.error({ err: error }, 'a journal entry of the run could not be saved'));
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
  }
}
