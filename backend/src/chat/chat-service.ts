import { isImageName } from '../files/model-images.ts';
import { randomUUID } from 'node:crypto';
import type { AgentControlMessage, ErrorCode, AgentUserInputMessage, ChatMessage, ClientMessage, ErrorEvent, StopReason } from '@stepwise/shared-types';
import { AgentControl } from '../agent/agent-control.ts';
import type { ControlCommand, ControlOutcome } from '../agent/control-bus.ts';
import { DEFAULT_STRATEGY, type RunInput } from '../agent/strategy.ts';
import { LOCAL_OWNER, type RunRecord, type SessionOwner, type Store } from '../store/store.ts';
import { byOf, type User } from '../auth/user.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { sessionEvents } from './run-endings.ts';
import { PLAIN_CHAT, type RunPastWithHistory, SessionRuns } from './session-runs.ts';
import { SessionSnapshots, SnapshotLimitError } from './session-snapshots.ts';
import type { SessionEventLog } from './session-event-log.ts';

/** Who sent a message: the client (user or address) and user, whose shares of the run slots a new run takes. */
export interface MessageSender {
  /** The client's share of the run slots: its user's when users sign in, else its address's. */
  client?: string | undefined;
  /** The user (multi-user modes): counted against MAX_RUNS_PER_USER, and named as `by` on what they do to a run. */
  user?: User | undefined;
}

/** What is running in a session: a plain chat answer or an agent run. */
interface ActiveResponse {
  runId: string;
  control: AgentControl;
  done: Promise<void>;
  /** The log's count of response_complete events when it began: once it grows, the response has ended for its clients. */
  completionsBefore: number;
}

const reject = (code: ErrorCode, message: string): ErrorEvent => ({ type: 'error', code, message });
/** MAX_RUNS_PER_USER reached, here or on the instances together. */
const userAtLimit = (limit: number): ErrorEvent =>
  reject('too_many_runs', `You have ${limit} runs going at once, the most one user may have (MAX_RUNS_PER_USER); wait for one to finish`);
const RUN_ACTIVE = reject('run_active', 'A response is still in progress: stop it or wait for response_complete');
const ANOTHER_INSTANCE_RUNS = reject('run_active', 'A response is still in progress (on another instance): stop it or wait for response_complete');
const SESSION_DELETED = reject('session_deleted', 'This chat was deleted; start a new one');

/**
 * What a session is doing; every check and change of it goes through `state`, switched exhaustively.
 * - `idle`: nothing runs; a message may start something.
 * - `claiming`: asking the run host for the session before a run starts (several instances).
 * - `holding`: a snapshot command or a continuation works; nothing else may start meanwhile.
 * - `running`: an answer or a run is in progress (it may have begun inside a holding command).
 * - `deleted`: everything is refused; a response still winding down is kept until it has ended.
 */
type SessionState =
  | { kind: 'idle' }
  | { kind: 'claiming' }
  | { kind: 'holding' }
  | { kind: 'running'; response: ActiveResponse }
  | { kind: 'deleted'; response: ActiveResponse | undefined };

export { PLAIN_CHAT };
export type { ChatDependencies };

/** One chat session: plain answers, agent runs (one at a time), and the controls that steer them. */
export class ChatService {
  private state: SessionState = { kind: 'idle' };
  private readonly recovering = new Map<string, Promise<'resumed' | 'closed'>>();

  /** Resolves once the session has its row in the store (made at its first write, not at connect). */
  private stored: Promise<void> | undefined;
  private readonly runs: SessionRuns;
  private readonly snapshots: SessionSnapshots;

  /** Whose chat this is. */
  get owner(): SessionOwner {
    return this.currentOwner;
  }
  private currentOwner: SessionOwner;

  constructor(
    readonly sessionId: string,
    readonly log: SessionEventLog,
    private readonly deps: ChatDependencies,
    options: { stored: boolean; owner?: SessionOwner } = { stored: true },
  ) {
    this.currentOwner = options.owner ?? { id: LOCAL_OWNER };
    if (options.stored) this.stored = Promise.resolve();
    this.runs = new SessionRuns(sessionId, log, deps);
    this.snapshots = new SessionSnapshots(sessionId, log, deps);
  }

  /** Follows an admin's adoption of this chat from before sign-in (the store has the new owner already). */
  adoptedBy(owner: SessionOwner): void {
    if (this.currentOwner.id === LOCAL_OWNER) this.currentOwner = owner;
  }

  /**
   * Stores the session the first time something is written in it: a page that connects and
   * leaves (or a client cycling connections) leaves no row behind.
   */
  ensureStored(): Promise<void> {
    this.stored ??= this.deps.store.createSession(this.sessionId, this.owner).then(
      () => undefined,
      (error: unknown) => {
        this.stored = undefined;
        throw error;
      },
    );
    return this.stored;
  }

  /** Whether anything was ever written in the session (it has, or is getting, its row in the store). */
  get written(): boolean {
    return this.stored !== undefined;
  }

  /** The answer or run in progress here, if any (also while a deleted session's run winds down). */
  private get active(): ActiveResponse | undefined {
    switch (this.state.kind) {
      case 'running':
      case 'deleted':
        return this.state.response;
      case 'idle':
      case 'claiming':
      case 'holding':
        return undefined;
      default:
        return unexpectedState(this.state);
    }
  }

  /** Why nothing new may start now, or undefined when something may: the one place that says so. */
  private refusal(): ErrorEvent | undefined {
    switch (this.state.kind) {
      case 'idle':
        return undefined;
      case 'claiming':
      case 'holding':
      case 'running':
        return RUN_ACTIVE;
      case 'deleted':
        return SESSION_DELETED;
      default:
        return unexpectedState(this.state);
    }
  }

  /** Goes back to `idle` from `from`, unless the session has moved on meanwhile (a run started, it was deleted). */
  private leave(from: 'claiming' | 'holding'): void {
    if (this.state.kind === from) this.state = { kind: 'idle' };
  }

  /** True while an answer or a run is in progress. */
  get busy(): boolean {
    return this.active !== undefined;
  }

  /** How many questions the run in progress here waits on a person to answer. */
  get questionsWaiting(): number {
    return this.active?.control.pendingQuestions.length ?? 0;
  }

  /** The ids of the questions the run in progress here waits on. */
  get pendingQuestionIds(): string[] {
    return this.active?.control.pendingQuestions ?? [];
  }

  /** The run in progress here, if any. */
  get activeRunId(): string | undefined {
    return this.active?.runId;
  }

  /** From now on every message is refused: the session is being deleted. */
  refuseMessages(): void {
    this.state = { kind: 'deleted', response: this.active };
  }

  /** Handles one validated client message; resolves with the error to send back to its sender, if any. */
  async handle(message: ClientMessage, sender: MessageSender = {}): Promise<ErrorEvent | undefined> {
    if (this.state.kind === 'deleted') return SESSION_DELETED;
    switch (message.type) {
      case 'chat':
        return this.chat(message, sender);
      case 'agent_control':
        return this.control(message, sender);
      case 'agent_user_input':
        return this.input(message, sender);
      case 'snapshot_save':
        return this.whenIdle(async () => void (await this.snapshots.save(message.label)));
      case 'snapshot_rollback':
        return this.whenIdle(async () =>
          (await this.snapshots.rollback(message.snapshot_id))
            ? undefined
            : reject('unknown_snapshot', `No snapshot "${message.snapshot_id.slice(0, 100)}" in this chat`),
        );
      case 'snapshot_resume':
        return this.resumeSnapshot(message.snapshot_id, message.extra_steps, sender);
      case 'todos_set':
        return this.whenIdle(() => this.strategyMessage(message));
      default: {
        const unexpected: never = message;
        return reject('unknown_type', `Unknown message type ${JSON.stringify((unexpected as { type: unknown }).type)}`);
      }
    }
  }

  /** Several instances, shutting down: the run stops here unended, and its lease is let go at once for another instance to take. */
  async handOver(): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.control.handOver();
    await active.done;
    await this.deps.host.letGo(this.sessionId);
  }

  /** Stops whatever is running (shutdown, eviction) and waits until it has ended. */
  async stop(reason: StopReason): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.control.stop(reason);
    await active.done;
  }

  /** Checks a chat message and starts its run: a plain answer, or an agent run with its strategy. */
  private async chat(message: ChatMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    await this.settleEnded();
    const refused = this.refusal();
    if (refused) return refused;
    const { config, tools, kernel } = this.deps;
    const images = (message.attachments ?? []).filter(isImageName);
    if (images.length > config.images.maxPerMessage) {
      return reject(
        'too_many_images',
        `A message may send at most ${config.images.maxPerMessage} images (IMAGE_MAX_PER_MESSAGE); this one has ${images.length}`,
      );
    }
    const attached = images.length ? { images: [...new Set(images)] } : {};
    if (!message.agent_mode) {
      return this.start({ strategy: PLAIN_CHAT, question: message.content, toolNames: [], maxSteps: 0, options: {}, ...attached }, sender);
    }
    const toolNames = message.tools ?? tools.defaultNames();
    const unknown = toolNames.filter((name) => !tools.has(name));
    if (unknown.length > 0) return reject('unknown_tool', `Unknown tool(s): ${unknown.join(', ')}`);
    const strategy = message.strategy ?? DEFAULT_STRATEGY;
    if (!kernel.names.includes(strategy)) {
      return reject('unknown_strategy', `Unknown strategy "${strategy.slice(0, 64)}"; known: ${kernel.names.join(', ')}`);
    }
    const checked = kernel.checkOptions(strategy, message.strategy_options);
    if (!checked.ok) return reject('invalid_message', `Invalid "chat" message: ${checked.message}`);
    const { maxStepsDefault, maxStepsLimit } = config.agent;
    const maxSteps = Math.min(maxStepsLimit, Math.max(1, message.agent_max_steps ?? maxStepsDefault));
    const maxCostUsd = message.max_cost_usd ?? config.agent.runCostBudgetUsd;
    return this.start(
      {
        strategy,
        question: message.content,
        toolNames: [...new Set(toolNames)],
        maxSteps,
        options: checked.options,
        ...(message.tool_approval ? { toolApproval: message.tool_approval } : {}),
        ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
        ...attached,
      },
      sender,
    );
  }

  private async control(message: AgentControlMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    if (message.action === 'resume') return this.continueRun(message, sender);
    const by = byOf(sender.user);
    const command: ControlCommand = { type: 'stop', reason: 'user', ...(by ? { by } : {}) };
    // To the run here, or wherever else it executes.
    const reply = this.active ? await this.send(command) : await this.deps.host.sendToSession(this.sessionId, command);
    if (reply.type !== 'stop' || reply.outcome === 'no_active_run') return reject('no_active_run', 'There is no active run to stop');
    return undefined;
  }

  /**
   * A run that is not executing just now (its process restarting) may still take the answer to a
   * question it asked, when its host keeps answers (Restate): it takes it when it asks again.
   * True when the answer was kept.
   */
  private async keepAnswer(questionId: string, answer: string): Promise<boolean> {
    const { host, store } = this.deps;
    const run = (await store.listRuns(this.sessionId)).at(-1);
    if (run?.status !== 'running') return false;
    const deadline = await askedIn(store, run, questionId);
    if (deadline === undefined || Date.parse(deadline) <= Date.now()) return false;
    return host.keepAnswer(run.id, questionId, answer);
  }

  private async input(message: AgentUserInputMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    // An approval travels to the run as its JSON (tools/approval.ts reads it back), like any answer.
    const content = message.approval ? JSON.stringify(message.approval) : (message.content ?? '');
    const by = byOf(sender.user);
    const command: ControlCommand = { type: 'answer', content, questionId: message.question_id, ...(by ? { by } : {}) };
    const reply = this.active ? await this.send(command) : await this.deps.host.sendToSession(this.sessionId, command);
    let outcome = reply.type === 'answer' ? reply.outcome : 'no_pending_input';
    // The run is not waiting for it just now (its process restarting, its journal replaying): its
    // host may keep the answer to a question the run asked and nobody answered yet.
    if (
      outcome !== 'answered' &&
      outcome !== 'ambiguous_input' &&
      outcome !== 'invalid_answer' &&
      outcome !== 'invalid_arguments' &&
      message.question_id &&
      (await this.keepAnswer(message.question_id, content))
    )
      outcome = 'answered';
    switch (outcome) {
      case 'answered':
        return undefined;
      case 'no_pending_input':
        return reject('no_pending_input', 'The agent is not waiting for an answer');
      case 'unknown_question':
        return reject('no_pending_input', `No question with id "${message.question_id!.slice(0, 100)}" is waiting`);
      case 'ambiguous_input':
        return reject('ambiguous_input', 'Several questions are waiting: say which one this answers with question_id');
      case 'invalid_answer':
        return reject(
          'invalid_answer',
          reply?.type === 'answer' && reply.message ? reply.message : 'This question takes only one of its choices (such as Yes or No); it is still waiting',
        );
      case 'invalid_arguments':
        return reject(
          'invalid_arguments',
          `${reply?.type === 'answer' && reply.message ? reply.message : 'The edited arguments do not fit the tool'}; the approval is still waiting`,
        );
      default: {
        const unexpected: never = outcome;
        return reject('internal_error', `Unexpected outcome ${String(unexpected)}`);
      }
    }
  }

  /**
   * Runs a snapshot command while nothing runs (refused with run_active otherwise), holding the
   * session meanwhile so that no message starts a run in the middle of it.
   */
  /** A message a strategy takes itself (autonomous's `todos_set`), handed to that strategy, while nothing runs. */
  private async strategyMessage(message: ClientMessage): Promise<ErrorEvent | undefined> {
    const handler = this.deps.kernel.clientMessageHandler(message.type);
    if (!handler) return reject('unknown_type', `No strategy takes "${message.type}" messages`);
    return handler(message, {
      sessionId: this.sessionId,
      writeFile: async (name, content) => void (await this.deps.files.write(this.sessionId, name, content, { source: 'user' })),
      emit: (event) => this.log.record(event),
    });
  }

  private async whenIdle(work: () => Promise<ErrorEvent | undefined>): Promise<ErrorEvent | undefined> {
    await this.settleEnded();
    const refused = this.refusal();
    if (refused) return refused;
    this.state = { kind: 'holding' };
    const { host } = this.deps;
    try {
      // The session is held here while the command works (and its run, if it starts one, goes on).
      if (!(await host.claim(this.sessionId, null))) return ANOTHER_INSTANCE_RUNS;
      if (host.shared) await this.log.syncFromStore();
      await this.ensureStored();
      return await work();
    } catch (error) {
      if (error instanceof SnapshotLimitError) return reject('too_many_snapshots', error.message);
      throw error;
    } finally {
      this.leave('holding');
      if (!this.active) await host.release(this.sessionId, null);
    }
  }

  /** Rolls back to a snapshot or a step's end and resumes its run from there. */
  private resumeSnapshot(id: string, extraSteps: number | undefined, sender: MessageSender): Promise<ErrorEvent | undefined> {
    return this.whenIdle(async () => {
      const found = await this.snapshots.resumable(id, extraSteps);
      if (!found.ok) return reject(found.code, found.message);
      // Taken before the snapshot command lets go of the session, so nothing starts in between; the
      // user's run counted before anything is rolled back.
      const runId = randomUUID();
      const past: RunPastWithHistory = found.past;
      return this.withRunClaim(runId, sender, async () => {
        await this.snapshots.rollback(id);
        return this.occupy(runId, sender, { force: false }, (control) => this.runs.launchContinuation({ ...found.input, runId }, past, control));
      });
    });
  }

  /** Continues a run that ended short of an answer, as a new run of the same request. */
  private continueRun(message: AgentControlMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    // Holds the session from the first look-up to the start, so nothing else starts in between.
    return this.whenIdle(async () => {
      const found = await this.runs.continuation(message.run_id, message.extra_steps);
      if (!found.ok) return reject('not_resumable', found.message);
      const runId = randomUUID();
      // A new budget for the continued run, when given (a run that ended with "budget" needs one).
      const input = message.max_cost_usd === undefined ? found.input : { ...found.input, maxCostUsd: message.max_cost_usd };
      return this.withRunClaim(runId, sender, async () =>
        this.occupy(runId, sender, { force: false }, (control) => this.runs.launchContinuation({ ...input, runId }, found.past, control)),
      );
    });
  }

  /**
   * A run whose response_complete is logged (or queued) has ended for its clients, who may send
   * their next message the moment it arrives: wait for what is left of it here (its engine
   * returning, its slot freed) instead of refusing that message with run_active.
   */
  private async settleEnded(): Promise<void> {
    const active = this.active;
    if (active && this.log.completions > active.completionsBefore) await active.done;
  }

  /** Sends a command to the active run through the control bus, wherever the run executes. */
  private send(command: ControlCommand): Promise<ControlOutcome> {
    return this.deps.controlBus.send(this.active!.runId, command);
  }

  /**
   * Marks the session busy at once (so a second message is refused) and runs the request in the
   * background, in one of the server's run slots; refuses with `server_busy` when none is free.
   */
  private async start(
    request: Omit<RunInput, 'runId' | 'sessionId' | 'history'> & { strategy: string },
    sender: MessageSender,
  ): Promise<ErrorEvent | undefined> {
    const runId = randomUUID();
    const launch = () => this.occupy(runId, sender, { force: false }, (control) => this.runs.launch({ ...request, runId }, control));
    if (!this.deps.host.shared) return launch();
    // Several instances: one run per session across all of them, and this one writes the log from now on.
    this.state = { kind: 'claiming' };
    try {
      return await this.withRunClaim(runId, sender, async () => {
        await this.log.syncFromStore();
        this.leave('claiming');
        return launch();
      });
    } finally {
      // Once the run started, the session is `running`, which this leaves alone.
      this.leave('claiming');
    }
  }

  /**
   * Several instances: names run `runId` in the session's lease, if its user may start one more
   * (MAX_RUNS_PER_USER, counted over every instance in the same step), then `start`s it. The lease
   * is let go again when the run does not start: `start` refused it, or threw.
   */
  private async withRunClaim(runId: string, sender: MessageSender, start: () => Promise<ErrorEvent | undefined>): Promise<ErrorEvent | undefined> {
    const { host, runSlots } = this.deps;
    if (host.shared) {
      const limit = runSlots.userLimit;
      const quota = sender.user && limit !== undefined ? { owner: sender.user.id, limit } : undefined;
      const claimed = await host.claimRun(this.sessionId, runId, quota);
      if (claimed === 'at_limit') return userAtLimit(limit!);
      if (claimed === 'held') return ANOTHER_INSTANCE_RUNS;
    }
    let refused: ErrorEvent | undefined;
    try {
      refused = await start();
    } catch (error) {
      await host.release(this.sessionId, runId);
      throw error;
    }
    if (refused) await host.release(this.sessionId, runId);
    return refused;
  }

  /** Takes a run slot and runs `work` as the session's one active response. */
  private occupy(runId: string, sender: MessageSender, options: { force: boolean }, work: (control: AgentControl) => Promise<void>): ErrorEvent | undefined {
    // One response at a time, whatever asked for it (a second start must never orphan the first).
    if (this.state.kind === 'running') return RUN_ACTIVE;
    if (this.state.kind === 'deleted') return SESSION_DELETED;
    const { runSlots } = this.deps;
    const slot = runSlots.tryAcquire(sender.client, sender.user?.id);
    const release = typeof slot === 'function' ? slot : options.force ? () => undefined : undefined;
    if (!release) {
      switch (slot) {
        case 'user_busy':
          return userAtLimit(runSlots.userLimit!);
        case 'client_busy':
          return reject('too_many_runs', `You have ${runSlots.clientLimit} runs going at once, the most one client may have; wait for one to finish`);
        default:
          return reject('server_busy', `The server is at its limit of ${runSlots.limit} concurrent runs; try again shortly`);
      }
    }
    const control = new AgentControl();
    // Once its ending is logged (or queued) the run is over for its clients, who may have seen it
    // end: a stop then finds no run to stop, though the run is still saving its outcome here.
    const detach = this.deps.controlBus.attach(runId, (command) =>
      command.type === 'stop' && (this.log.hasEnding(runId) || this.log.completions > response.completionsBefore)
        ? { type: 'stop', outcome: 'no_active_run' }
        : handleCommand(control, command),
    );
    const { host } = this.deps;
    const done = this.ensureStored()
      // The session's hold names the run, so stop and answers (from any instance) find it here.
      .then(async () => {
        if (!(await host.claim(this.sessionId, runId)))
          this.deps.logger.warn({ session_id: this.sessionId, run_id: runId }, 'another instance holds the session of a run starting here');
      })
      .then(() => work(control))
      .catch(async (error: unknown) => {
        // Whatever failed (the store, say), the client hears of it and is not left waiting.
        this.deps.logger.error({ err: error, session_id: this.sessionId }, 'response failed');
        this.log.broadcastError({ type: 'error', code: 'internal_error', message: 'The message could not be handled; nothing was run' });
        await this.log.record({ type: 'response_complete' }).catch(() => undefined);
      })
      .finally(() => {
        detach();
        release();
        if (this.active === response) this.state = this.state.kind === 'deleted' ? { kind: 'deleted', response: undefined } : { kind: 'idle' };
        void (control.handedOver ? host.letGo(this.sessionId) : host.release(this.sessionId, runId));
      });
    const response: ActiveResponse = { runId, control, done, completionsBefore: this.log.completions };
    this.state = { kind: 'running', response };
    return undefined;
  }

  /**
   * After a restart: a run the server was in the middle of goes on from its journal, or is closed
   * (no journal, RESUME_INTERRUPTED_RUNS off, its ending already logged). Resolves with which.
   */
  async recover(run: RunRecord): Promise<'resumed' | 'closed'> {
    // Two recoveries of one run (at startup, and Restate executing it meanwhile) share one outcome.
    let recovering = this.recovering.get(run.id);
    if (!recovering) {
      recovering = this.recoverOnce(run).finally(() => this.recovering.delete(run.id));
      this.recovering.set(run.id, recovering);
    }
    return recovering;
  }

  private async recoverOnce(run: RunRecord): Promise<'resumed' | 'closed'> {
    if (this.active?.runId === run.id) return 'resumed';
    const found = this.active ? undefined : await this.runs.recoverInput(run);
    if (this.active?.runId === run.id) return 'resumed';
    if (!found || this.active) {
      await this.closeInterrupted(run);
      return 'closed';
    }
    // A run that was going before the restart is not refused for lack of a slot.
    this.occupy(run.id, {}, { force: true }, (control) => this.runs.execute(found.input, control, found.past));
    return 'resumed';
  }

  /** Closes a run the server was in the middle of when it stopped (see SessionRuns). */
  async closeInterrupted(run: RunRecord): Promise<void> {
    await this.runs.closeInterrupted(run);
    // Closed, it holds the session no more (a hold that names a later run stays).
    await this.deps.host.release(this.sessionId, run.id);
  }
}

/** A run's side of the control bus: stop and answers reach its AgentControl. */
function handleCommand(control: AgentControl, command: ControlCommand): ControlOutcome {
  switch (command.type) {
    case 'stop':
      control.stop(command.reason, command.by);
      return { type: 'stop', outcome: 'stopping' };
    case 'answer': {
      const outcome = control.provideInput(command.content, command.questionId, command.by);
      return outcome === 'answered' || !control.rejection ? { type: 'answer', outcome } : { type: 'answer', outcome, message: control.rejection };
    }
    default: {
      const unexpected: never = command;
      throw new Error(`Unknown control command ${JSON.stringify(unexpected)}`);
    }
  }
}

/** The deadline of question `questionId` when run `run` asked it (its log holds the question); undefined when it did not. */
async function askedIn(store: Store, run: RunRecord, questionId: string): Promise<string | undefined> {
  for await (const event of sessionEvents(store, run.sessionId, run.afterSeq ?? 0)) {
    if (event.run_id === run.id && event.type === 'agent_update' && event.update_type === 'agent_request_input' && event.question_id === questionId)
      return event.deadline;
  }
  return undefined;
}

function unexpectedState(state: never): never {
  throw new Error(`Unknown session state ${JSON.stringify(state)}`);
}
