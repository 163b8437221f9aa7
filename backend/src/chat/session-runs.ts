import type { AgentControl } from '../agent/agent-control.ts';
import { runEvents } from '../agent/run-events.ts';
import type { RunInput } from '../agent/strategy.ts';
import type { LlmMessage } from '../messages.ts';
import type { RunRecord } from '../store/store.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { readLoggedRun, saveRunEnd } from './run-endings.ts';
import type { SessionEventLog } from './session-event-log.ts';

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
    private readonly deps: Pick<ChatDependencies, 'store' | 'kernel' | 'logger' | 'files' | 'config' | 'tools'>,
  ) {}

  /** Records the request (the user's message, the run) and runs it. */
  async launch(request: Omit<RunInput, 'sessionId' | 'history'> & { strategy: string }, control: AgentControl): Promise<void> {
    const { store } = this.deps;
    const history = await this.history();
    const afterSeq = this.log.lastSeq;
    await store.appendMessages(this.sessionId, [{ role: 'user', content: request.question }], afterSeq);
    // Plain chat's events carry no run id, so its record says where in the log they begin.
    const plainChat = request.strategy === PLAIN_CHAT;
    await store.createRun({ id: request.runId, sessionId: this.sessionId, strategy: request.strategy, maxSteps: request.maxSteps, ...(plainChat ? { afterSeq } : {}) });
    await this.execute({ ...request, sessionId: this.sessionId, history }, control);
  }

  /**
   * What continuing a run would start, or why it cannot: the run (default: the session's last) must
   * be an agent run, the session's last, and ended short of an answer (stopped, failed, input timed
   * out, at its step limit). The new run has the same request, strategy, options and tools, and
   * starts from the earlier run's messages.
   */
  async continuation(
    runId: string | undefined,
    extraSteps: number | undefined,
  ): Promise<{ ok: true; request: Omit<RunInput, 'sessionId' | 'runId'> & { strategy: string } } | { ok: false; message: string }> {
    const { store, config } = this.deps;
    const runs = await store.listRuns(this.sessionId);
    const last = runs.at(-1);
    const target = runId === undefined ? last : runs.find((run) => run.id === runId);
    if (!target) return { ok: false, message: runId === undefined ? 'This chat has no run to continue' : `This chat has no run "${runId.slice(0, 100)}"` };
    if (target.strategy === PLAIN_CHAT) return { ok: false, message: 'A plain answer cannot be continued: send a new message' };
    if (target.id !== last?.id) return { ok: false, message: 'Only the chat’s last run can be continued' };
    if (target.status === 'running') return { ok: false, message: 'That run is still going' };
    const logged = await readLoggedRun(store, target, { plainChat: false });
    if (target.status === 'completed' && logged.completionReason !== 'max_steps') {
      return { ok: false, message: 'That run answered; send a new message to go further' };
    }
    if (!this.deps.kernel.has(target.strategy)) return { ok: false, message: `Strategy "${target.strategy}" is not available` };
    const messages = (await store.listMessages(this.sessionId)).map((record) => record.message);
    const asked = messages.findLastIndex((message) => message.role === 'user');
    if (asked < 0) return { ok: false, message: 'The run’s question is not in the history' };
    const { maxStepsDefault, maxStepsLimit } = config.agent;
    return {
      ok: true,
      request: {
        strategy: target.strategy,
        question: (messages[asked] as { content: string }).content,
        history: trimToBudget(messages.slice(0, asked), config.agent.contextBudgetChars),
        maxSteps: Math.min(maxStepsLimit, Math.max(1, extraSteps ?? maxStepsDefault)),
        toolNames: logged.start?.tools ?? this.deps.tools.defaultNames(),
        options: logged.start?.options ?? {},
        // Its last message is the answer it ended with (the best so far, or a note): the new run goes on from its steps.
        continuation: { fromRunId: target.id, transcript: withoutClosingAnswer(messages.slice(asked + 1)) },
      },
    };
  }

  /** Records a run that continues an earlier one (no new user message: the request is the same) and runs it. */
  async launchContinuation(request: Omit<RunInput, 'sessionId'> & { strategy: string }, control: AgentControl): Promise<void> {
    await this.deps.store.createRun({ id: request.runId, sessionId: this.sessionId, strategy: request.strategy, maxSteps: request.maxSteps });
    await this.execute({ ...request, sessionId: this.sessionId }, control);
  }

  async execute(input: RunInput, control: AgentControl, resume?: unknown): Promise<void> {
    const { store, logger, kernel } = this.deps;
    const runLogger = logger.child({ session_id: this.sessionId });
    await kernel.execute(
      input,
      { control, sink: this.log, filesManifest: () => this.deps.files.manifest(this.sessionId) },
      {
        resume,
        saveCheckpoint: (checkpoint) => store.saveCheckpoint(input.runId, checkpoint),
        onEnd: async (outcome) => {
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
            },
            runLogger,
          );
        },
      },
    );
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
        await this.log.emit({ type: 'response_complete' });
      } else {
        const events = runEvents(run.id);
        if (!logged.end) await this.log.emit(events.stopped('server_restart', logged.step));
        await this.log.emit(events.responseComplete());
      }
    }
    await saveRunEnd(store, run.id, logged.end ?? { status: 'stopped', endReason: 'server_restart' }, logger);
  }

  /** The conversation so far, as the model sees it: whole turns, the oldest dropped beyond the context budget. */
  private async history(): Promise<LlmMessage[]> {
    const messages = (await this.deps.store.listMessages(this.sessionId)).map((record) => record.message);
    return trimToBudget(messages, this.deps.config.agent.contextBudgetChars);
  }
}

/**
 * Drops the oldest turns (a user message and everything up to the next one) until the history
 * fits `budgetChars`. Whole turns go, so a tool call never loses its result.
 */
export function trimToBudget(messages: LlmMessage[], budgetChars: number): LlmMessage[] {
  const size = (message: LlmMessage) =>
    (message.content?.length ?? 0) + (message.role === 'assistant' ? (message.toolCalls ?? []).reduce((sum, call) => sum + call.arguments.length + call.name.length, 0) : 0);
  let total = messages.reduce((sum, message) => sum + size(message), 0);
  let start = 0;
  while (total > budgetChars && start < messages.length) {
    // Drop one turn: the message at `start` and everything before the next user message.
    let end = start + 1;
    while (end < messages.length && messages[end]!.role !== 'user') end++;
    for (let index = start; index < end; index++) total -= size(messages[index]!);
    start = end;
  }
  return messages.slice(start);
}


/** A run's messages without the plain answer it closed with, so its steps are where a continuation starts. */
function withoutClosingAnswer(messages: LlmMessage[]): LlmMessage[] {
  const last = messages.at(-1);
  return last?.role === 'assistant' && !last.toolCalls?.length ? messages.slice(0, -1) : messages;
}
