import { randomUUID } from 'node:crypto';
import type { AgentControlMessage, AgentUserInputMessage, ChatMessage, ClientMessage, ErrorEvent, StopReason } from '@stepwise/shared-types';
import { AgentControl } from '../agent/agent-control.ts';
import { executeRun, type RunCheckpoint } from '../agent/agent-runner.ts';
import { runEvents } from '../agent/run-events.ts';
import type { RunInput, Strategy } from '../agent/strategy.ts';
import type { Config } from '../config/config.ts';
import { isAbortError, toClientError } from '../errors.ts';
import type { LlmClient, LlmMessage } from '../llm/llm-client.ts';
import type { Logger } from '../logger.ts';
import type { PromptProvider } from '../prompts/prompt-provider.ts';
import type { RunEnd, RunRecord, Store } from '../store/store.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';
import type { SessionFiles } from '../files/session-files.ts';
import { readLoggedRun, saveRunEnd } from './run-endings.ts';
import type { RunSlots } from './run-slots.ts';
import type { SessionEventLog } from './session-event-log.ts';

/** The services every session shares. */
export interface ChatDependencies {
  config: Config;
  llm: LlmClient;
  tools: ToolRegistry;
  prompts: PromptProvider;
  store: Store;
  strategies: ReadonlyMap<string, Strategy>;
  logger: Logger;
  /** Shared by every session: the server's limit of concurrent answers and runs. */
  runSlots: RunSlots;
  files: SessionFiles;
}

/** Who sent a message: the client's address, whose share of the run slots a new run takes. */
export interface MessageSender {
  address?: string | undefined;
}

/** What is running in a session: a plain chat answer or an agent run. */
interface ActiveResponse {
  control: AgentControl;
  done: Promise<void>;
}

const reject = (code: string, message: string): ErrorEvent => ({ type: 'error', code, message });

/** The run records of plain chat answers carry this strategy name. */
export const PLAIN_CHAT = 'chat';

/** One chat session: plain answers, agent runs (one at a time), and the controls that steer them. */
export class ChatService {
  private active: ActiveResponse | undefined;

  /** Resolves once the session has its row in the store (made at its first write, not at connect). */
  private stored: Promise<void> | undefined;
  private deleted = false;

  constructor(
    readonly sessionId: string,
    readonly log: SessionEventLog,
    private readonly deps: ChatDependencies,
    options: { stored: boolean } = { stored: true },
  ) {
    if (options.stored) this.stored = Promise.resolve();
  }

  /**
   * Stores the session the first time something is written in it: a page that connects and
   * leaves (or a client cycling connections) leaves no row behind.
   */
  ensureStored(): Promise<void> {
    this.stored ??= this.deps.store.createSession(this.sessionId).then(
      () => undefined,
      (error: unknown) => {
        this.stored = undefined;
        throw error;
      },
    );
    return this.stored;
  }

  /** True while an answer or a run is in progress. */
  get busy(): boolean {
    return this.active !== undefined;
  }

  /** From now on every message is refused: the session is being deleted. */
  refuseMessages(): void {
    this.deleted = true;
  }

  /** Handles one validated client message; returns the error to send back to its sender, if any. */
  handle(message: ClientMessage, sender: MessageSender = {}): ErrorEvent | undefined {
    if (this.deleted) return reject('session_deleted', 'This chat was deleted; start a new one');
    switch (message.type) {
      case 'chat':
        return this.chat(message, sender);
      case 'agent_control':
        return this.control(message);
      case 'agent_user_input':
        return this.input(message);
      default: {
        const unexpected: never = message;
        return reject('unknown_type', `Unknown message type ${JSON.stringify((unexpected as { type: unknown }).type)}`);
      }
    }
  }

  /** Stops whatever is running (shutdown, eviction) and waits until it has ended. */
  async stop(reason: StopReason): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.control.stop(reason);
    await active.done;
  }

  private chat(message: ChatMessage, sender: MessageSender): ErrorEvent | undefined {
    if (this.active) {
      return reject('run_active', 'A response is still in progress: stop it or wait for response_complete');
    }
    const { config, tools, strategies } = this.deps;
    if (!message.agent_mode) {
      return this.start((control) => this.answer(message.content, control), {
        address: sender.address,
        timeoutMs: config.limits.chatTimeoutMs,
      });
    }

    const toolNames = message.tools ?? tools.defaultNames();
    const unknown = toolNames.filter((name) => !tools.has(name));
    if (unknown.length > 0) return reject('unknown_tool', `Unknown tool(s): ${unknown.join(', ')}`);
    const strategy = strategies.get(message.strategy ?? 'roa');
    if (!strategy) {
      return reject('unknown_strategy', `Unknown strategy "${message.strategy}"; known: ${[...strategies.keys()].join(', ')}`);
    }
    const { maxStepsDefault, maxStepsLimit } = config.agent;
    const maxSteps = Math.min(maxStepsLimit, Math.max(1, message.agent_max_steps ?? maxStepsDefault));
    return this.start(
      (control) => this.runAgent({ question: message.content, toolNames: [...new Set(toolNames)], maxSteps, strategy }, control),
      { address: sender.address },
    );
  }

  private control(_message: AgentControlMessage): ErrorEvent | undefined {
    if (!this.active) return reject('no_active_run', 'There is no active run to stop');
    this.active.control.stop('user');
    return undefined;
  }

  private input(message: AgentUserInputMessage): ErrorEvent | undefined {
    const outcome = this.active?.control.provideInput(message.content, message.question_id) ?? 'no_pending_input';
    switch (outcome) {
      case 'answered':
        return undefined;
      case 'no_pending_input':
        return reject('no_pending_input', 'The agent is not waiting for an answer');
      case 'unknown_question':
        return reject('no_pending_input', `No question with id "${message.question_id!.slice(0, 100)}" is waiting`);
      case 'ambiguous_input':
        return reject('ambiguous_input', 'Several questions are waiting: say which one this answers with question_id');
      default: {
        const unexpected: never = outcome;
        return reject('internal_error', `Unexpected outcome ${String(unexpected)}`);
      }
    }
  }


  /**
   * Marks the session busy at once (so a second message is refused) and runs `work` in the
   * background, in one of the server's run slots; refuses with `server_busy` when none is free.
   */
  private start(
    work: (control: AgentControl) => Promise<void>,
    options: { force?: boolean; address?: string | undefined; timeoutMs?: number } = {},
  ): ErrorEvent | undefined {
    const { runSlots } = this.deps;
    const slot = runSlots.tryAcquire(options.address);
    const release = typeof slot === 'function' ? slot : options.force ? () => undefined : undefined;
    if (!release) {
      return slot === 'address_busy'
        ? reject('too_many_runs', `You have ${runSlots.addressLimit} runs going at once, the most one client may have; wait for one to finish`)
        : reject('server_busy', `The server is at its limit of ${runSlots.limit} concurrent runs; try again shortly`);
    }
    const control = new AgentControl();
    // A plain answer's wall clock (runs keep their own, in the runner): the model may stall forever.
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            this.log.broadcastError({
              type: 'error',
              code: 'timeout',
              message: `The answer took longer than ${Math.round(options.timeoutMs! / 1000)} s (CHAT_TIMEOUT_MS) and was stopped`,
            });
            control.stop('timeout');
          }, options.timeoutMs);
    timer?.unref();
    const done = this.ensureStored()
      .then(() => work(control))
      .catch(async (error: unknown) => {
        // Whatever failed (the store, say), the client hears of it and is not left waiting.
        this.deps.logger.error({ err: error, session_id: this.sessionId }, 'response failed');
        this.log.broadcastError({ type: 'error', code: 'internal_error', message: 'The message could not be handled; nothing was run' });
        await this.log.emit({ type: 'response_complete' }).catch(() => undefined);
      })
      .finally(() => {
        clearTimeout(timer);
        release();
        this.active = undefined;
      });
    this.active = { control, done };
    return undefined;
  }

  /** Goes on with a run that waited for the user when the server stopped. */
  resume(run: RunRecord, checkpoint: RunCheckpoint): void {
    const strategy = this.deps.strategies.get(run.strategy);
    if (!strategy || this.active) {
      void this.closeInterrupted(run);
      return;
    }
    // A run that already waited before the restart is not refused for lack of a slot.
    this.start((control) => this.execute(strategy, checkpoint.input, control, checkpoint.state), { force: true });
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

  /** A plain chat answer, streamed. */
  private async answer(question: string, control: AgentControl): Promise<void> {
    const { store, llm, prompts } = this.deps;
    const runId = randomUUID();
    const history = await this.history();
    const user: LlmMessage = { role: 'user', content: question };
    const afterSeq = this.log.lastSeq;
    await store.appendMessages(this.sessionId, [user], afterSeq);
    // Recorded like a run, so a restart in the middle of it still ends with response_complete; its
    // events carry no run id, so the record says where in the log they begin.
    await store.createRun({ id: runId, sessionId: this.sessionId, strategy: PLAIN_CHAT, maxSteps: 0, afterSeq });
    let end: RunEnd = { status: 'completed' };
    try {
      const { text, usage } = await llm.complete({
        purpose: 'chat',
        messages: [{ role: 'system', content: prompts.render('chatSystem', { today: today() }) }, ...history, user],
        signal: control.signal,
        onDelta: (delta) => this.log.preview({ type: 'assistant_delta', delta }),
      });
      await this.log.emit({ type: 'assistant_message', content: text });
      await store.appendMessages(this.sessionId, [{ role: 'assistant', content: text }], this.log.lastSeq);
      end = { status: 'completed', usage };
    } catch (error) {
      if (isAbortError(error, control.signal)) {
        end = { status: 'stopped', endReason: control.stopReason ?? 'user' };
      } else {
        this.deps.logger.warn({ err: error, session_id: this.sessionId }, 'chat answer failed');
        const clientError = toClientError(error);
        this.log.broadcastError({ type: 'error', ...clientError });
        end = { status: 'failed', endReason: clientError.message };
      }
    } finally {
      await saveRunEnd(store, runId, end, this.deps.logger.child({ session_id: this.sessionId }));
      await this.log.emit({ type: 'response_complete' });
    }
  }

  private async runAgent(
    run: { question: string; toolNames: string[]; maxSteps: number; strategy: Strategy },
    control: AgentControl,
  ): Promise<void> {
    const { store } = this.deps;
    const runId = randomUUID();
    const history = await this.history();
    await store.appendMessages(this.sessionId, [{ role: 'user', content: run.question }], this.log.lastSeq);
    await store.createRun({ id: runId, sessionId: this.sessionId, strategy: run.strategy.name, maxSteps: run.maxSteps });
    const input: RunInput = {
      runId,
      sessionId: this.sessionId,
      question: run.question,
      history,
      maxSteps: run.maxSteps,
      toolNames: run.toolNames,
    };
    await this.execute(run.strategy, input, control);
  }

  private async execute(strategy: Strategy, input: RunInput, control: AgentControl, resume?: unknown): Promise<void> {
    const { store, config, llm, tools, prompts, logger } = this.deps;
    await executeRun(
      strategy,
      input,
      control,
      this.log,
      {
        llm,
        tools,
        prompts,
        inputTimeoutMs: config.agent.inputTimeoutMs,
        filesManifest: () => this.deps.files.manifest(this.sessionId),
        budget: { timeoutMs: config.agent.runTimeoutMs, tokens: config.agent.runTokenBudget },
        logger: logger.child({ session_id: this.sessionId }),
      },
      {
        resume,
        saveCheckpoint: (checkpoint) => store.saveCheckpoint(input.runId, checkpoint),
        onEnd: async (outcome) => {
          const runLogger = logger.child({ session_id: this.sessionId });
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

function today(): string {
  return new Date().toISOString().slice(0, 10);
}
