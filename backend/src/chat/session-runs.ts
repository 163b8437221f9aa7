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
    private readonly deps: Pick<ChatDependencies, 'store' | 'kernel' | 'logger' | 'files' | 'config'>,
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

