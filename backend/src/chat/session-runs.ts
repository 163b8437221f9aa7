import { loadModelImages } from '../files/model-images.ts';
import type { AgentControl } from '../agent/kernel/agent-control.ts';
import { runEvents } from '../agent/kernel/run-events.ts';
import { JOURNAL, type RunPast } from '../agent/kernel/run-journal.ts';
import { readNotepad } from '../tools/notepad-tool.ts';
import { DEFAULT_STRATEGY, type RunInput } from '../agent/kernel/strategy.ts';
import type { LlmMessage } from '../messages.ts';
import type { RunRecord, Store } from '../store/store.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { hasEnded, readLoggedRun, saveRunEnd, strategyEventsOf } from './run-endings.ts';
import type { SessionMessages } from './session-messages.ts';
import type { SessionEventLog } from './session-event-log.ts';

/** The completions a run may go on from: it stopped at a limit, or could not answer. */
const GOES_ON: ReadonlySet<string> = new Set(['max_steps', 'budget', 'unresolved']);

/** A run's past, with how much of its transcript the session's history holds already. */
export type RunPastWithHistory = RunPast & { storedMessages: number };

/** What a run admitted in a session starts from: a new request, a continuation of an earlier run (or snapshot), or a run recovered after a restart. */
export type RunStart =
  | { kind: 'new'; request: Omit<RunInput, 'sessionId' | 'history'> & { strategy: string } }
  | { kind: 'continuation'; input: RunInput; past: RunPastWithHistory }
  | { kind: 'recovery'; input: RunInput; past: RunPastWithHistory };

/** The run records (and the strategy) of plain chat answers carry this name. */
export const PLAIN_CHAT = 'chat';

/**
 * The runs of one session as the store knows them: each is recorded (the user's message, the
 * run), handed to the kernel with the session's history, and its end saved; a run the server was
 * in the middle of when it stopped is closed once.
 */
export class SessionRuns {
  constructor(
    private readonly sessionId: string,
    private readonly log: SessionEventLog,
    private readonly deps: Pick<ChatDependencies, 'store' | 'kernel' | 'engine' | 'logger' | 'files' | 'config' | 'tools'>,
    /** The messages people send while runs go: a run reads them. */
    private readonly messages: SessionMessages,
  ) {}

  /** Records what `start` asks for (a new request's message, a new run) and runs it. */
  start(start: RunStart, control: AgentControl): Promise<void> {
    switch (start.kind) {
      case 'new':
        return this.launch(start.request, control);
      case 'continuation':
        return this.launchContinuation(start.input, start.past, control);
      case 'recovery':
        return this.execute(start.input, control, start.past);
      default: {
        const unknown: never = start;
        throw new Error(`Unknown run start ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** Records the request (the user's message, the run) and runs it. */
  private async launch(request: Omit<RunInput, 'sessionId' | 'history'> & { strategy: string }, control: AgentControl): Promise<void> {
    const { store } = this.deps;
    const history = await this.history();
    const afterSeq = this.log.lastSeq;
    await store.appendMessages(this.sessionId, [{ role: 'user', content: request.question }], afterSeq);
    // Plain chat's events carry no run id, so its record says where in the log they begin.
    const plainChat = request.strategy === PLAIN_CHAT;
    await store.createRun({
      id: request.runId,
      sessionId: this.sessionId,
      strategy: request.strategy,
      maxSteps: request.maxSteps,
      ...(plainChat ? { afterSeq } : {}),
    });
    await this.execute({ ...request, sessionId: this.sessionId, history }, control);
  }

  /**
   * What continuing a run would start, or why it cannot: the run (default: the session's last) must
   * be an agent run, the session's last, and ended short of an answer (stopped, failed, input timed
   * out, at its step limit). The new run has the same request, strategy, options and tools, a
   * budget of `extraSteps` more steps, and goes on from the earlier run's journal: its completed
   * calls are not made again, its steps are not shown again.
   */
  async continuation(
    runId: string | undefined,
    extraSteps: number | undefined,
  ): Promise<{ ok: true; input: Omit<RunInput, 'runId'>; past: RunPastWithHistory } | { ok: false; message: string }> {
    const { store, config } = this.deps;
    const runs = await store.listRuns(this.sessionId);
    const last = runs.at(-1);
    const target = runId === undefined ? last : runs.find((run) => run.id === runId);
    if (!target) return { ok: false, message: runId === undefined ? 'This chat has no run to continue' : `This chat has no run "${runId.slice(0, 100)}"` };
    if (target.strategy === PLAIN_CHAT) return { ok: false, message: 'A plain answer cannot be continued: send a new message' };
    if (target.id !== last?.id) return { ok: false, message: 'Only the chat’s last run can be continued' };
    if (target.status === 'running' || target.status === 'parked') return { ok: false, message: 'That run is still going' };
    const logged = await readLoggedRun(store, target, { plainChat: false });
    if (target.status === 'completed' && !GOES_ON.has(logged.completionReason ?? 'answered')) {
      return { ok: false, message: 'That run answered; send a new message to go further' };
    }
    const past = await this.readPast(target);
    if (!past) return { ok: false, message: 'That run was recorded before runs could be continued' };
    if (!this.deps.kernel.has(past.input.strategy ?? target.strategy)) return { ok: false, message: `Strategy "${target.strategy}" is not available` };
    const { maxStepsDefault, maxStepsLimit } = config.agent;
    const extra = Math.max(1, extraSteps ?? maxStepsDefault);
    const stepsSoFar = target.steps ?? logged.step;
    if (stepsSoFar >= maxStepsLimit) {
      return { ok: false, message: `That run has taken ${stepsSoFar} steps, the most a run may take (AGENT_MAX_STEPS_LIMIT)` };
    }
    const conversation = await this.conversation();
    // A run that completed (at its step limit) closed with an answer: its steps are the messages before it.
    const stored = conversation.after.length - (target.status === 'completed' ? 1 : 0);
    return {
      ok: true,
      input: {
        ...past.input,
        sessionId: this.sessionId,
        history: conversation.history,
        maxSteps: nextBudget(past.input.maxSteps, stepsSoFar, extraSteps, extra, maxStepsLimit),
      },
      past: { ...past.past, storedMessages: Math.max(0, stored) },
    };
  }

  /** Records a run that continues an earlier one (no new user message: the request is the same) and runs it. */
  private async launchContinuation(input: RunInput, past: RunPastWithHistory, control: AgentControl): Promise<void> {
    await this.deps.store.createRun({ id: input.runId, sessionId: this.sessionId, strategy: input.strategy ?? DEFAULT_STRATEGY, maxSteps: input.maxSteps });
    await this.execute(input, control, past);
  }

  /**
   * After a restart, a run the server was in the middle of goes on from its journal
   * (RESUME_INTERRUPTED_RUNS): what it had done is not done again, what it had shown is not shown
   * again, a question it was waiting on waits on. Without a journal (or with the setting off) it
   * is closed. Resolves with what became of it.
   */
  async recoverInput(run: RunRecord, options: { answered?: boolean } = {}): Promise<{ input: RunInput; past: RunPastWithHistory } | undefined> {
    // A parked run that was answered goes on whatever RESUME_INTERRUPTED_RUNS says: it was not interrupted.
    if (!(this.deps.config.resumeInterruptedRuns || options.answered) || !this.deps.kernel.has(run.strategy)) return undefined;
    const logged = await readLoggedRun(this.deps.store, run, { plainChat: run.strategy === PLAIN_CHAT });
    if (hasEnded(logged)) return undefined;
    const past = await this.readPast(run);
    if (!past) return undefined;
    const conversation = await this.conversation();
    // A continued run goes on from runs whose messages the history holds already (one that
    // completed, at its step limit, closed with an answer after them); a first run stored none.
    const predecessor = logged.start?.resumedFrom ? await this.deps.store.getRun(logged.start.resumedFrom) : undefined;
    const stored = predecessor ? conversation.after.length - (predecessor.status === 'completed' ? 1 : 0) : 0;
    return {
      input: { ...past.input, runId: run.id, sessionId: this.sessionId, history: conversation.history },
      past: { ...past.past, storedMessages: Math.max(0, stored) },
    };
  }

  private async execute(input: RunInput, control: AgentControl, past?: RunPastWithHistory): Promise<void> {
    const { store, logger, engine } = this.deps;
    const runLogger = logger.child({ session_id: this.sessionId });
    await engine.execute(
      input,
      {
        control,
        sink: this.log,
        filesManifest: () => this.deps.files.manifest(this.sessionId),
        notepad: () => readNotepad(this.deps.files, this.sessionId),
        images: (names) => loadModelImages(this.deps.files, this.sessionId, names, this.deps.config.images),
        steersRead: (ids) => this.messages.read(ids),
        files: {
          read: (name) => this.deps.files.readWhole(this.sessionId, name),
          write: async (name, content) =>
            void (await this.deps.files.write(this.sessionId, name, content, { source: 'agent', runId: input.runId, signal: control.signal })),
        },
      },
      {
        ...(past ? { past } : {}),
        // Parked: the store says so, with what it waits on; nothing of it ends.
        onPark: (parked) => store.parkRun(input.runId, parked),
        onEnd: async (outcome) => {
          if (outcome.status === 'parked') return;
          try {
            await store.appendMessages(this.sessionId, outcome.transcript, this.log.lastSeq);
          } catch (error) {
            // The run still ends in the store, or a restart would end it a second time.
            runLogger.error({ err: error, run_id: input.runId }, 'could not save the messages of the run');
          }
          await saveRunEnd(
            store,
            input.runId,
            {
              status: outcome.status,
              endReason: outcome.status === 'stopped' ? outcome.reason : outcome.status === 'failed' ? outcome.message : undefined,
              steps: outcome.steps,
              usage: outcome.usage,
              spending: {
                cachedTokens: outcome.usage.cachedTokens ?? 0,
                reasoningTokens: outcome.usage.reasoningTokens ?? 0,
                costUsd: outcome.costUsd ?? null,
              },
            },
            runLogger,
          );
        },
      },
    );
  }

  /** A run's journaled input and its past (journal and the events its strategy logged); undefined without a journal. */
  private async readPast(run: RunRecord): Promise<{ input: Omit<RunInput, 'sessionId' | 'history'> & { runId: string }; past: RunPast } | undefined> {
    const entries = await this.deps.store.readJournal(run.id);
    const inputEntry = entries.find((entry) => entry.kind === JOURNAL.input);
    if (!inputEntry) return undefined;
    const input = { ...(inputEntry.value as Omit<RunInput, 'sessionId' | 'history'>), strategy: run.strategy };
    const events = await strategyEventsOf(this.deps.store, run);
    return { input, past: { runId: run.id, entries: entries.filter((entry) => entry !== inputEntry), events } };
  }

  /** The session's history split at the last question: the turns before it (trimmed to the budget), and what came after it. */
  private conversation(): Promise<{ history: LlmMessage[]; after: LlmMessage[] }> {
    return latestHistory(this.deps.store, this.sessionId, this.deps.config.agent.contextBudgetChars, { beforeLastQuestion: true });
  }

  /**
   * Closes a run the server was in the middle of when it stopped: nothing of it can go on. A run
   * ends once: what its log already holds of its ending is not logged again (a run whose end could
   * not be saved has its response_complete logged, and is only marked finished in the store).
   */
  async closeInterrupted(run: RunRecord): Promise<void> {
    const { store, logger } = this.deps;
    const plainChat = run.strategy === PLAIN_CHAT;
    const logged = await readLoggedRun(store, run, { plainChat });
    if (!logged.complete) {
      if (plainChat) {
        await this.log.record({ type: 'response_complete' });
      } else {
        const events = runEvents(run.id);
        if (!logged.end) await this.log.record(events.stopped('server_restart', logged.step));
        await this.log.record(events.responseComplete());
      }
    }
    await saveRunEnd(store, run.id, logged.end ?? { status: 'stopped', endReason: 'server_restart' }, logger);
  }

  /** The conversation so far, as the model sees it: whole turns, the oldest dropped beyond the context budget. */
  private async history(): Promise<LlmMessage[]> {
    return (await latestHistory(this.deps.store, this.sessionId, this.deps.config.agent.contextBudgetChars, { beforeLastQuestion: false })).history;
  }
}

/** How many messages one read of a session's history takes, from its end backwards. */
const HISTORY_PAGE = 256;

/**
 * The session's history as trimToBudget gives it (with `beforeLastQuestion`, of the messages before
 * the last user message, and those after it apart), read from the end back only as far as that
 * needs: a long session costs a run what its context budget holds, not its whole length. Reading
 * stops at a user message from which the messages to trim pass the budget: trimming the whole
 * history would drop every turn before it anyway. Pages are read one after another: messages
 * appended meanwhile come after the cursor and are not read; a rewind (replaceMessages) never runs
 * while a run is starting, as the session holds its runs for it.
 */
export async function latestHistory(
  store: Store,
  sessionId: string,
  budgetChars: number,
  { beforeLastQuestion }: { beforeLastQuestion: boolean },
): Promise<{ history: LlmMessage[]; after: LlmMessage[] }> {
  let messages: LlmMessage[] = [];
  let olderThan: number | undefined;
  for (;;) {
    const page = await store.listLatestMessages(sessionId, HISTORY_PAGE, olderThan);
    messages = [...page.messages.map((record) => record.message), ...messages];
    olderThan = page.olderThan;
    const asked = beforeLastQuestion ? messages.findLastIndex((message) => message.role === 'user') : messages.length;
    const trimmed = asked < 0 ? [] : messages.slice(0, asked);
    const after = beforeLastQuestion && asked >= 0 ? messages.slice(asked + 1) : [];
    if (olderThan === undefined) return { history: trimToBudget(trimmed, budgetChars), after };
    if (asked < 0) continue;
    const firstTurn = trimmed.findIndex((message) => message.role === 'user');
    if (firstTurn >= 0 && totalSize(trimmed, firstTurn) > budgetChars) {
      return { history: trimToBudget(trimmed.slice(firstTurn), budgetChars), after };
    }
  }
}

/**
 * Drops the oldest turns (a user message and everything up to the next one) until the history
 * fits `budgetChars`. Whole turns go, so a tool call never loses its result.
 */
export function trimToBudget(messages: LlmMessage[], budgetChars: number): LlmMessage[] {
  let total = totalSize(messages, 0);
  let start = 0;
  while (total > budgetChars && start < messages.length) {
    // Drop one turn: the message at `start` and everything before the next user message.
    let end = start + 1;
    while (end < messages.length && messages[end]!.role !== 'user') end++;
    for (let index = start; index < end; index++) total -= messageSize(messages[index]!);
    start = end;
  }
  return messages.slice(start);
}

/** What a message counts against the context budget: its text and its tool calls'. */
function messageSize(message: LlmMessage): number {
  return (
    (message.content?.length ?? 0) +
    (message.role === 'assistant' ? (message.toolCalls ?? []).reduce((sum, call) => sum + call.arguments.length + call.name.length, 0) : 0)
  );
}

function totalSize(messages: readonly LlmMessage[], from: number): number {
  let total = 0;
  for (let index = from; index < messages.length; index++) total += messageSize(messages[index]!);
  return total;
}

/**
 * The step budget of a run that goes on from `stepsSoFar` steps: a run that stopped short of its
 * own budget (it failed, was stopped) keeps that budget unless the person asks for more steps;
 * one that used it up gets `extra` more. Never past AGENT_MAX_STEPS_LIMIT.
 */
export function nextBudget(ownBudget: number | undefined, stepsSoFar: number, asked: number | undefined, extra: number, limit: number): number {
  if (asked === undefined && ownBudget !== undefined && stepsSoFar < ownBudget) return Math.min(limit, ownBudget);
  return Math.min(limit, stepsSoFar + extra);
}
