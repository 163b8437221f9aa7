import { randomUUID } from 'node:crypto';
import type { AgentControlMessage, AgentUserInputMessage, ChatMessage, ClientMessage, ErrorEvent, StopReason } from '@stepwise/shared-types';
import { AgentControl } from '../agent/kernel/agent-control.ts';
import type { RunInput } from '../agent/kernel/strategy.ts';
import type { ControlCommand, ControlOutcome } from '../agent/kernel/control-bus.ts';
import { byOf } from '../auth/user.ts';
import type { Admission, Hold } from '../hosting/run-admission.ts';
import { LOCAL_OWNER, type RunRecord, type SessionOwner } from '../store/store.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { ParkedRuns } from './parked-runs.ts';
import { type ChatRequest, chatRequest } from './chat-request.ts';
import { answerRun, controlRun, handleCommand, reject, strategyMessage } from './run-commands.ts';
import type { SessionEventLog } from './session-event-log.ts';
import { type ActiveResponse, activeOf, SessionRow, RUN_ACTIVE, refusalOf, SESSION_DELETED, type SessionState, unexpectedState } from './session-state.ts';
import { PLAIN_CHAT, type RunPastWithHistory, type RunStart, SessionRuns } from './session-runs.ts';
import { SessionSnapshots, SnapshotLimitError } from './session-snapshots.ts';
import { type MessageSender, SessionMessages } from './session-messages.ts';
import { RunRecoveries } from './session-recovery.ts';

export type { MessageSender };

/** The session held for a command (see RunAdmission.hold). */
type Held = Admission & { kind: 'admitted'; hold: Hold };

/** One chat session: plain answers, agent runs (one at a time), and the controls that steer them. */
export class ChatService {
  private state: SessionState = { kind: 'idle' };
  private readonly recoveries: RunRecoveries;

  /** The session's row in the store, made at its first write (not at connect). */
  private readonly row: SessionRow;
  private readonly runs: SessionRuns;
  /** The messages people send while a run goes (steers, queued messages). */
  readonly messages: SessionMessages<MessageSender>;
  private readonly snapshots: SessionSnapshots;
  private readonly parked: ParkedRuns;

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
    this.row = new SessionRow(() => deps.store.createSession(sessionId, this.owner), options.stored);
    this.messages = new SessionMessages(sessionId, log, deps);
    this.runs = new SessionRuns(sessionId, log, deps, this.messages);
    this.snapshots = new SessionSnapshots(sessionId, log, deps);
    this.recoveries = new RunRecoveries({
      sessionId: this.sessionId,
      activeRunId: () => this.active?.runId,
      recoverInput: async (run) => {
        const found = await this.runs.recoverInput(run);
        return found && { kind: 'recovery', input: found.input, past: found.past };
      },
      closeInterrupted: (run) => this.closeInterrupted(run),
      closeRecord: (run) => this.runs.closeInterrupted(run),
      admit: (run) => this.deps.admission.admit({ sessionId: this.sessionId, runId: run.id, log: this.log, kind: 'recovering' }),
      begin: (run, admission, start) => this.begin(run.id, admission, start) === undefined,
    });
    this.parked = new ParkedRuns(sessionId, log, deps, this.runs, {
      // Parked a moment ago: what is left of it here (its store record, its engine returning, its slot) settles first.
      parking: async () => {
        if (this.active?.control.parkedOn) await this.active.done;
      },
      enter: async () => {
        await this.settleEnded();
        if (this.refusal()) return false;
        this.state = { kind: 'admitting' };
        return true;
      },
      leave: () => this.leave('admitting'),
      begin: (runId, admission, start) => this.begin(runId, admission, start),
    });
  }

  /** Follows an admin's adoption of this chat from before sign-in (the store has the new owner already). */
  adoptedBy(owner: SessionOwner): void {
    if (this.currentOwner.id === LOCAL_OWNER) this.currentOwner = owner;
  }

  /** Stores the session the first time something is written in it (a page that connects and leaves leaves no row). */
  ensureStored(): Promise<void> {
    return this.row.ensure();
  }

  /** Whether anything was ever written in the session (it has, or is getting, its row in the store). */
  get written(): boolean {
    return this.row.written;
  }

  /** The answer or run in progress here, if any (also while a deleted session's run winds down). */
  private get active(): ActiveResponse | undefined {
    return activeOf(this.state);
  }

  /** Why nothing new may start now, or undefined when something may. */
  private refusal(): ErrorEvent | undefined {
    return refusalOf(this.state);
  }

  /** Goes back to `idle` from `from`, unless the session has moved on meanwhile (a run started, it was deleted). */
  private leave(from: 'admitting' | 'holding'): void {
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
        return this.whileHeld(async () => void (await this.snapshots.save(message.label)));
      case 'snapshot_rollback':
        return this.whileHeld(async () =>
          (await this.snapshots.rollback(message.snapshot_id))
            ? undefined
            : reject('unknown_snapshot', `No snapshot "${message.snapshot_id.slice(0, 100)}" in this chat`),
        );
      case 'snapshot_resume':
        return this.resumeSnapshot(message.snapshot_id, message.extra_steps, sender);
      case 'todos_set':
        return this.whileHeld(() => strategyMessage(this.deps, this.sessionId, this.log, message));
      case 'cancel_message':
        return this.messages.cancel(message, this.toRun);
      default: {
        const unexpected: never = message;
        return reject('unknown_type', `Unknown message type ${JSON.stringify((unexpected as { type: unknown }).type)}`);
      }
    }
  }

  /** Shutting down with runs that go on elsewhere or later: the run stops here unended, and its lease is let go at once for another instance to take. */
  async handOver(): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.control.handOver();
    await active.done;
    await active.admission.release('handed_over');
  }

  /** Stops whatever is running (shutdown, eviction) and waits until it has ended. */
  async stop(reason: StopReason): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.control.stop(reason);
    await active.done;
  }

  /**
   * Checks a chat message and starts its run: a plain answer, or an agent run with its strategy.
   * While a run goes (here or on another instance), the message is for that run (see SessionMessages).
   */
  private async chat(message: ChatMessage, sender: MessageSender, fromMessage?: string): Promise<ErrorEvent | undefined> {
    await this.settleEnded();
    const active = this.active;
    if (this.state.kind === 'running' && active) return this.messages.send(message, active.plain, this.toRun, sender);
    const refused = this.refusal();
    if (refused) return refused;
    const checked = chatRequest(message, this.deps);
    if ('error' in checked) return checked.error;
    const refusal = await this.start({ ...checked.request, ...(fromMessage ? { messageId: fromMessage } : {}) }, sender);
    // The session's run goes on another instance (or began here meanwhile): the message is for it.
    if (refusal?.code === 'run_active' && !fromMessage) {
      const running = this.active ?? (await this.messages.runningElsewhere());
      if (running) return this.messages.send(message, running.plain, this.toRun, sender);
    }
    return refusal;
  }

  /**
   * A run ended here: the oldest message waiting starts the next one (not when it was handed over
   * or parked: it goes on elsewhere). What a person stopped does not read its steers later.
   */
  private async startNext(control: AgentControl): Promise<void> {
    if (control.handedOver || control.parkedOn || this.state.kind !== 'idle') return;
    const next = await this.messages.next(control.stopReason === 'user');
    if (!next) return;
    const refused = await this.chat(next.message, next.sender ?? {}, next.id);
    if (refused) this.log.broadcastError({ ...refused, message: `A queued message could not start its run: ${refused.message}` });
  }

  private async control(message: AgentControlMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    if (message.action === 'resume' && message.node_id === undefined) return this.continueRun(message, sender);
    const by = byOf(sender.user);
    const refused = await controlRun(message, by, this.toRun);
    // A parked run is stopped where it stands: it ends, without going on.
    if (refused?.code === 'no_active_run' && message.action === 'stop' && message.node_id === undefined && (await this.parked.stop(by))) return undefined;
    return refused;
  }

  private input(message: AgentUserInputMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    const by = byOf(sender.user);
    // An answer no run takes now may be a parked run's: it goes on with it.
    return answerRun(this.deps, this.sessionId, message, by, this.toRun, (questionId, answer) => this.parked.answer(questionId, answer, by));
  }

  /**
   * Runs a command while the session is held (refused with run_active while something runs), so
   * that no message starts a run in the middle of it; a run the command starts takes the hold over.
   */
  private async whileHeld(work: (held: Held) => Promise<ErrorEvent | undefined>): Promise<ErrorEvent | undefined> {
    await this.settleEnded();
    const refused = this.refusal();
    if (refused) return refused;
    this.state = { kind: 'holding' };
    let held: Held | { kind: 'refused'; error: ErrorEvent } | undefined;
    try {
      const parked = await this.parked.refusal();
      if (parked) return parked;
      const taken = await this.deps.admission.hold(this.sessionId, this.log);
      held = taken;
      if (taken.kind === 'refused') return taken.error;
      await this.ensureStored();
      return await work(taken);
    } catch (error) {
      if (error instanceof SnapshotLimitError) return reject('too_many_snapshots', error.message);
      throw error;
    } finally {
      // The session goes back to idle (unless a run began in it) and its hold is given back.
      this.leave('holding');
      if (held?.kind === 'admitted') await held.release();
    }
  }

  /** Rolls back to a snapshot or a step's end and resumes its run from there, the session held from the look-up to the start. */
  private resumeSnapshot(id: string, extraSteps: number | undefined, sender: MessageSender): Promise<ErrorEvent | undefined> {
    return this.whileHeld(async (held) => {
      const found = await this.snapshots.resumable(id, extraSteps);
      if (!found.ok) return reject(found.code, found.message);
      // Admitted before anything is rolled back: a refused run leaves the chat as it was.
      return this.continueHeld(held, sender, found.input, found.past, () => this.snapshots.rollback(id));
    });
  }

  /** Continues a run that ended short of an answer, as a new run of the same request, the session held from the look-up to the start. */
  private continueRun(message: AgentControlMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    return this.whileHeld(async (held) => {
      const found = await this.runs.continuation(message.run_id, message.extra_steps);
      if (!found.ok) return reject('not_resumable', found.message);
      // A new budget for the continued run, when given (a run that ended with "budget" needs one).
      const input = message.max_cost_usd === undefined ? found.input : { ...found.input, maxCostUsd: message.max_cost_usd };
      return this.continueHeld(held, sender, input, found.past);
    });
  }

  /** Admits a continuation within the session's hold, then (`before`, a rollback, once admitted) begins it. */
  private async continueHeld(held: Held, sender: MessageSender, input: Omit<RunInput, 'runId'>, past: RunPastWithHistory, before?: () => Promise<unknown>) {
    const runId = randomUUID();
    const admission = await this.admit(runId, sender, held.hold);
    if (admission.kind === 'refused') return admission.error;
    await before?.().catch(async (error: unknown) => {
      await admission.release();
      throw error;
    });
    return this.begin(runId, admission, { kind: 'continuation', input: { ...input, runId }, past });
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

  /** Sends a command to the session's run (see send). */
  private readonly toRun = (command: ControlCommand) => this.send(command);

  /** Sends a command to the session's run: the one here, or wherever else it executes. */
  private send(command: ControlCommand): Promise<ControlOutcome> {
    const active = this.active;
    return active ? this.deps.controlBus.send(active.runId, command) : this.deps.router.sendToSession(this.sessionId, command);
  }

  /** Asks whether a new run of `sender` may start in this session (see RunAdmission). */
  private admit(runId: string, sender: MessageSender, within?: Hold): Promise<Admission> {
    return this.deps.admission.admit({ sessionId: this.sessionId, runId, log: this.log, client: sender.client, user: sender.user?.id, kind: 'new', within });
  }

  /** Starts a new request's run, once admitted; the session counts as busy from the first moment, so a second message is refused. */
  private async start(request: ChatRequest, sender: MessageSender): Promise<ErrorEvent | undefined> {
    const runId = randomUUID();
    this.state = { kind: 'admitting' };
    let admission: Admission;
    try {
      // The session counts as busy before anything is awaited, so that two messages never both start.
      const parked = await this.parked.refusal();
      admission = parked ? { kind: 'refused', error: parked } : await this.admit(runId, sender);
    } finally {
      // Once the run started, the session is `running`, which this leaves alone.
      this.leave('admitting');
    }
    switch (admission.kind) {
      case 'refused':
        return admission.error;
      case 'admitted':
        return this.begin(runId, admission, { kind: 'new', request: { ...request, runId } });
      default:
        return unexpectedState(admission);
    }
  }

  /**
   * Runs an admitted run in the background as the session's one active response; refused (and its
   * admission given back) when something else became the session's meanwhile.
   */
  private begin(runId: string, admission: Admission & { kind: 'admitted' }, start: RunStart): ErrorEvent | undefined {
    // One response at a time, whatever asked for it (a second start must never orphan the first).
    const refused = this.state.kind === 'running' ? RUN_ACTIVE : this.state.kind === 'deleted' ? SESSION_DELETED : undefined;
    if (refused) {
      void admission.release();
      return refused;
    }
    const control = new AgentControl();
    const plain = start.kind === 'new' && start.request.strategy === PLAIN_CHAT;
    // Once its ending is logged (or queued) the run is over for its clients, who may have seen it
    // end: a stop then finds no run to stop, though the run is still saving its outcome here. A run
    // parking finds none either: the stop ends it once it is parked (see ParkedRuns).
    const detach = this.deps.controlBus.attach(runId, (command) =>
      command.type === 'stop' && (control.parkedOn || this.log.hasEnding(runId) || this.log.completions > response.completionsBefore)
        ? { type: 'stop', outcome: 'no_active_run' }
        : handleCommand(control, command),
    );
    const done = this.ensureStored()
      // What people sent for the session's run and it has not read: it reads it at its first model call.
      .then(() => (plain ? [] : this.messages.steers()))
      .then((steers) => {
        for (const steer of steers) control.steering.add(steer);
        return this.runs.start(start, control);
      })
      .catch(async (error: unknown) => {
        // Whatever failed (the store, say), the client hears of it and is not left waiting.
        this.deps.logger.error({ err: error, session_id: this.sessionId }, 'response failed');
        this.log.broadcastError({ type: 'error', code: 'internal_error', message: 'The message could not be handled; nothing was run' });
        await this.log.record({ type: 'response_complete' }).catch(() => undefined);
      })
      .finally(() => {
        detach();
        if (this.active === response) this.state = this.state.kind === 'deleted' ? { kind: 'deleted', response: undefined } : { kind: 'idle' };
        void admission
          .release(control.handedOver ? 'handed_over' : 'ended')
          .then(() => this.startNext(control))
          .catch((error: unknown) => this.deps.logger.error({ err: error, session_id: this.sessionId }, 'could not start the next queued message'));
      });
    const response: ActiveResponse = { runId, control, done, completionsBefore: this.log.completions, admission, plain };
    this.state = { kind: 'running', response };
    return undefined;
  }

  /** After a restart: a run the server was in the middle of goes on from its journal, or is closed (see RunRecoveries). */
  recover(run: RunRecord): Promise<'resumed' | 'closed'> {
    return this.recoveries.recover(run);
  }

  /** Closes a run the server was in the middle of when it stopped (see SessionRuns): it holds the session no more. */
  async closeInterrupted(run: RunRecord): Promise<void> {
    await this.runs.closeInterrupted(run);
    await this.deps.admission.closed(this.sessionId, run.id);
  }
}
