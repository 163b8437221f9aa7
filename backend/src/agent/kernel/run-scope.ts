import type { Config } from '../../config/config.ts';
import type { CompletionResult, LlmClient } from '../../llm/llm-client.ts';
import type { Logger } from '../../logger.ts';
import type { LlmImage, LlmMessage, TokenUsage } from '../../messages.ts';
import type { PromptSet } from '../../prompts/prompt-provider.ts';
import type { ToolRegistry } from '../../tools/tool-registry.ts';
import type { AgentControl } from './agent-control.ts';
import { costBudget, RunBudgets, timeBudget, tokenBudget } from './budgets.ts';
import type { EventSink } from './event-sink.ts';
import { type FailedCall, watchedSink } from './grounding.ts';
import { AfterJournalSink, memoryFiles } from './journaled-sink.ts';
import { observedModel } from './observed-model.ts';
import type { EndingScope } from './run-ending.ts';
import { runEvents } from './run-events.ts';
import { steerTurn } from './steering.ts';
import { JournalReplay, journaledTools, ReplaySink, type RunJournal, type RunPast } from './run-journal.ts';
import { type CallSpending, RunSpending } from './run-spending.ts';
import type { AnyStrategy, Run, RunFiles, RunInput, RunProgress } from './strategy.ts';

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
  /** The run read these people's messages (once its journal holds that): they wait no more. */
  steersRead?: (ids: string[]) => Promise<void>;
}

/** A run's past, as the kernel goes on from it: this run's own (after a restart) or the run it continues. */
export type KernelPast = RunPast & {
  /** How many messages of the past's transcript the session's history holds already. */
  storedMessages: number;
};

/** What the kernel shares with every run. */
export interface KernelServices {
  llm: LlmClient;
  tools: ToolRegistry;
  config: Config;
  logger: Logger;
  journal: RunJournal;
}

/** One run as the kernel drives it: the strategy's bag (`run`), and what the kernel keeps to begin and end it. */
export interface RunScope extends EndingScope {
  run: Run;
  replay: JournalReplay;
  /** True when the run goes on after a restart under its own id: its beginning is logged already. */
  samePast: boolean;
  budgets: RunBudgets;
  /** The tool calls of the run that failed: an answer that rests on one is not a success. */
  failures: FailedCall[];
}

/**
 * Sets a run up: its sink (events never reach the log ahead of the journal entries recorded before
 * them; every failed tool call noted), its journal replay, its model as it sees it (journaled,
 * counted, within its budgets), its tools, files and controls.
 */
export function openRun(
  services: KernelServices,
  strategy: { definition: AnyStrategy; prompts: PromptSet; options: Record<string, unknown> },
  input: RunInput,
  session: RunSession,
  hooks: { past?: KernelPast | undefined; journal?: RunJournal | undefined },
): RunScope {
  const { config } = services;
  const { control } = session;
  const { past } = hooks;
  const chatWire = strategy.definition.wire === 'chat';
  const samePast = past?.runId === input.runId;
  const journal = hooks.journal ?? services.journal;
  const logged = past ? new ReplaySink(session.sink, past.events) : session.sink;
  // The store's journal commits with the events, in order; another (Restate's) is waited for.
  const journaledSink = journal.commitsWithEvents ? logged : new AfterJournalSink(logged, () => replay.appendsSoFar());
  const failures: FailedCall[] = [];
  const sink = watchedSink(journaledSink, (failure) => failures.push(failure));
  const events = runEvents(chatWire ? undefined : input.runId);
  const logger = services.logger.child({ session_id: input.sessionId, run_id: input.runId, strategy: strategy.definition.name });
  const progress: RunProgress = { step: 0, transcript: [] as LlmMessage[] };
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  const spending = new RunSpending(usage);
  const timeoutMs = chatWire ? config.limits.chatTimeoutMs : config.agent.runTimeoutMs;
  const budgets = new RunBudgets([timeBudget(timeoutMs), tokenBudget(config.agent.runTokenBudget)], usage, control, logger);
  const replay = new JournalReplay(journal, input.runId, past, () => progress.step);
  const nodeEvents = (nodeId: string | undefined) => (nodeId ? events.node(nodeId) : events);
  // A call a fallback model answered is said in its step (plain chat's wire has no steps: its log line says it).
  const onFallback = async (purpose: string, result: CompletionResult<unknown>, nodeId: string | undefined) => {
    if (!chatWire && result.fallback && result.model)
      await sink.emit(nodeEvents(nodeId).modelFallback(progress.step, purpose, { model: result.model, ...result.fallback }));
  };
  const onSpent = async (call: CallSpending, nodeId: string | undefined) => {
    if (!chatWire) await sink.emit(nodeEvents(nodeId).usage(call));
  };
  // What a run changes in the world waits until the model call that asked for it is committed.
  const runFiles = session.files ?? memoryFiles();
  const run: Run = {
    input,
    options: strategy.options,
    llm: observedModel(services.llm, {
      runId: input.runId,
      replay,
      countReplayed: samePast,
      spending,
      onSpent,
      onFallback,
      logger,
      checkBudget: () => void budgets.check(),
      beforeCall: costBudget(input.maxCostUsd, spending, logger),
      steering: {
        inbox: control.steering,
        read: async (steers, nodeId, replayed, cut) => {
          if (steers.length === 0) return;
          // A message for the run as a whole joins its conversation; one for a branch goes with that call only.
          if (nodeId === undefined) progress.transcript.push(...steers.map(steerTurn));
          if (!replayed && !chatWire)
            for (const [index, steer] of steers.entries()) await sink.emit(nodeEvents(nodeId).steer(progress.step, steer, index === 0 ? cut : undefined));
          const read = session.steersRead;
          if (read) {
            const ids = steers.map((steer) => steer.id);
            void replay
              .settled()
              .then(() => read(ids))
              .catch((error: unknown) => logger.warn({ err: error, message_ids: ids }, 'could not mark messages as read'));
          }
        },
      },
    }),
    tools: journaledTools(services.tools, replay, logger),
    prompts: strategy.prompts,
    control,
    sink,
    events,
    progress,
    inputTimeoutMs: config.agent.inputTimeoutMs,
    approvalTimeoutAction: config.agent.approvalTimeoutAction,
    inputTimeoutAction: config.agent.inputTimeoutAction,
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
  // Several users: who answered each question is logged, before the run goes on with the answer.
  control.onAnswered = (questionId, by) =>
    void sink.emit(events.inputReceived(questionId, by)).catch((error: unknown) => logger.warn({ err: error }, 'could not log who answered'));
  return {
    run,
    replay,
    samePast,
    budgets,
    failures,
    control,
    sink,
    events,
    logger,
    chatWire,
    timeoutMs,
    progress,
    spending,
    usage,
    // What the session's history holds already (a continued run's past) is not saved again.
    added: () => progress.transcript.slice(past?.storedMessages ?? 0),
    settled: () => replay.settled(),
  };
}
