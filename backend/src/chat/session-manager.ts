import { randomUUID } from 'node:crypto';
import type { LoggedEventBody, ModelHealthEvent, SettingsChangedEvent, StopReason, ToolsChangedEvent } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { ControlBus } from '../agent/kernel/control-bus.ts';
import type { RunEngine } from '../agent/kernel/run-engine.ts';
import { RunKernel } from '../agent/kernel/run-kernel.ts';
import type { Config } from '../config/config.ts';
import { type FileListener, SessionFiles } from '../files/session-files.ts';
import type { Logger } from '../logger.ts';
import type { SessionOwner, SessionRecord, Store } from '../store/store.ts';
import { type ChatAccess, chatAccess, LOCAL_USER, ownerOf, type User } from '../auth/user.ts';
import { TOKENS } from '../tokens.ts';
import { ToolRegistry } from '../tools/tool-registry.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { ChatService } from './chat-service.ts';
import type { LiveRun } from './open-questions.ts';
import { PLAIN_CHAT } from './session-runs.ts';
import { JOURNAL } from '../agent/kernel/run-journal.ts';
import type { LogFanOut } from '../hosting/log-fan-out.ts';
import type { RunRouter } from '../hosting/run-router.ts';
import type { Arrival, RunHost } from '../hosting/run-host.ts';
import { RunAdmission } from '../hosting/run-admission.ts';
import { RunSlots } from '../limits/run-slots.ts';
import { type EventObserver, SessionEventLog } from './session-event-log.ts';

/** The close code of sockets whose session was deleted (an application code, like HTTP's 404). */
export const SESSION_DELETED_CLOSE_CODE = 4404;

export const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Keeps one ChatService per live session; a session outlives its sockets while a run goes on. */
@injectable()
export class SessionManager {
  private readonly sessions = new Map<string, ChatService>();
  private readonly opening = new Map<string, Promise<ChatService | undefined>>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  /** Sessions being deleted: they cannot be rejoined or reopened meanwhile. */
  private readonly deleting = new Set<string>();
  private readonly deps: ChatDependencies;
  /** How each live session stops following what other instances write to its log. */
  private readonly unfollows = new Map<string, () => void>();

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(RunKernel) private readonly kernel: RunKernel,
    @inject(TOKENS.ControlBus) controlBus: ControlBus,
    @inject(ToolRegistry) tools: ToolRegistry,
    @inject(TOKENS.Logger) private readonly logger: Logger,
    @inject(SessionFiles) files: SessionFiles,
    @inject(TOKENS.RunHost) private readonly host: RunHost,
    @inject(TOKENS.RunEngine) engine: RunEngine,
    @inject(TOKENS.EventObserver) private readonly observer: EventObserver | undefined,
    @inject(RunAdmission) admission: RunAdmission,
    @inject(RunSlots) private readonly runSlots: RunSlots,
    @inject(TOKENS.RunRouter) router: RunRouter,
    @inject(TOKENS.LogFanOut) private readonly fanOut: LogFanOut,
  ) {
    files.onChange(this.onFileChange);
    this.deps = {
      config,
      kernel,
      engine,
      controlBus,
      tools,
      store,
      logger,
      admission,
      files,
      router,
    };
    // A run arrives here that no socket started here (its instance went away, or Restate executes it here): set it up.
    host.onRunArrived((run) => this.arrive(run.sessionId, run.runId));
    // Another instance took over a session this one was too slow to renew: two must never run it.
    host.onLostLease((sessionId) => void this.sessions.get(sessionId)?.handOver());
  }

  /** Sends a message outside the logs to every client of every live session. */
  broadcast(message: ToolsChangedEvent | ModelHealthEvent | SettingsChangedEvent): void {
    for (const chat of this.sessions.values()) chat.log.broadcast(message);
  }

  /**
   * A file saved or deleted goes into its session's log, so every client (and a replay) sees it.
   * A run's response_complete is its last event: a change that a tool of the run makes after it
   * (a tool that ignored the stop for longer than the act phase waits) is logged without the run's
   * id. It is logged all the same, since the file did change and every file list must say so.
   */
  private readonly onFileChange: FileListener = async (change) => {
    const chat = await this.find(change.sessionId);
    if (!chat) return;
    await chat.ensureStored();
    // Checked right before emit, which queues the event at once: nothing can slip in between.
    let runId = change.runId;
    if (runId && chat.log.hasEnded(runId)) {
      this.logger.warn({ session_id: change.sessionId, run_id: runId, file: change.file.name }, 'file saved after its run ended');
      runId = undefined;
    }
    const event: LoggedEventBody =
      change.kind === 'saved'
        ? { type: 'file_saved', file: change.file, source: change.source, ...(runId ? { run_id: runId } : {}) }
        : { type: 'file_deleted', name: change.file.name };
    try {
      await chat.log.record(event);
    } finally {
      this.release(chat);
    }
  };

  /** A chat's last agent run: its strategy and the options it ran with (from its journaled input). */
  async lastAgentRun(sessionId: string): Promise<{ strategy: string; options?: Record<string, unknown> } | undefined> {
    const run = (await this.store.listRuns(sessionId)).findLast((candidate) => candidate.strategy !== PLAIN_CHAT);
    if (!run) return undefined;
    const input = (await this.store.readJournal(run.id)).find((entry) => entry.kind === JOURNAL.input)?.value as
      | { options?: Record<string, unknown> }
      | undefined;
    return { strategy: run.strategy, ...(input?.options ? { options: input.options } : {}) };
  }

  /** Answers and runs in progress on this instance. */
  get runsActive(): number {
    return this.runSlots.inUse;
  }

  /** Questions the runs on this instance wait on a person to answer. */
  get questionsWaiting(): number {
    let waiting = 0;
    for (const chat of this.sessions.values()) waiting += chat.questionsWaiting;
    return waiting;
  }

  /** The run executing in session `id` on this instance, and the questions it waits on (none when nothing executes here). */
  liveRun(id: string): LiveRun {
    const chat = this.sessions.get(id);
    return { runId: chat?.activeRunId, pendingQuestionIds: chat?.pendingQuestionIds ?? [] };
  }

  /** Names of the strategies a run may use. */
  get strategyNames(): string[] {
    return this.kernel.names;
  }

  /**
   * Rejoins the session `requestedId` when it exists and `user` may see it, else starts a new one
   * of theirs: under a new id, or with `keepId` (an AG-UI thread names its own) under the requested
   * one. Another user's session is treated exactly as an unknown id (nothing tells that it
   * exists), except with `keepId`, whose id cannot be taken: then the answer is undefined (404).
   * An admin rejoins anyone's session to watch it (`access: 'watch'`).
   */
  async open(
    requestedId: string | undefined,
    options: { keepId?: boolean; user?: User } = {},
  ): Promise<{ chat: ChatService; resumed: boolean; access: Exclude<ChatAccess, 'none'> } | undefined> {
    const user = options.user ?? LOCAL_USER;
    const valid = requestedId !== undefined && SESSION_ID.test(requestedId);
    if (valid) {
      const existing = await this.find(requestedId);
      if (existing) {
        const access = chatAccess(user, existing.owner.id);
        if (access !== 'none') {
          this.cancelEviction(requestedId);
          return { chat: existing, resumed: true, access };
        }
        if (options.keepId) return undefined;
      }
    }
    // The session is stored at its first write: connecting alone leaves nothing behind.
    const id = valid && options.keepId ? requestedId : randomUUID();
    const live = this.sessions.get(id);
    if (live) {
      // Made by another open of the same new id while this one looked it up: the same rules hold.
      const access = chatAccess(user, live.owner.id);
      if (access === 'none') return undefined;
      this.cancelEviction(id);
      return { chat: live, resumed: false, access };
    }
    return { chat: this.create(id, 0, { stored: false, owner: ownerOf(user) }), resumed: false, access: 'own' };
  }

  /** Whose session `id` is (a live one nobody wrote in yet included); undefined when there is none. */
  async ownerOf(id: string): Promise<string | undefined> {
    if (this.deleting.has(id)) return undefined;
    const live = this.sessions.get(id);
    if (live) return live.owner.id;
    return (await this.store.getSession(id))?.owner;
  }

  /**
   * Gives a chat from before sign-in (LOCAL_OWNER's) to `owner`, in the store and in memory;
   * undefined when there is no such chat or it is someone's already.
   */
  async adopt(id: string, owner: SessionOwner): Promise<SessionRecord | undefined> {
    const adopted = await this.store.adoptSession(id, owner);
    if (adopted) this.sessions.get(id)?.adoptedBy(owner);
    return adopted;
  }

  /** Sessions held in memory on this instance. */
  get liveSessions(): number {
    return this.sessions.size;
  }

  /**
   * Called when a socket leaves; an idle session with no sockets is dropped from memory later
   * (SESSION_IDLE_TTL_MS). A session nobody wrote in has nothing to keep and goes within
   * SESSION_UNUSED_TTL_MS: a client that connects and leaves in a loop would otherwise hold a
   * session per visit for the whole TTL. (The wait lets a message its last socket sent just before
   * leaving be handled: should it write, the session stays as any other.) Rejoining its id later
   * starts a new session, as for any id the store does not know.
   */
  release(chat: ChatService): void {
    if (chat.log.connectionCount > 0) return;
    this.cancelEviction(chat.sessionId);
    const unused = !chat.written;
    const timer = setTimeout(
      () => {
        this.idleTimers.delete(chat.sessionId);
        if (chat.busy || chat.log.connectionCount > 0 || (unused && chat.written)) return this.release(chat);
        this.drop(chat.sessionId);
      },
      unused ? Math.min(this.config.sessionUnusedTtlMs, this.config.sessionIdleTtlMs) : this.config.sessionIdleTtlMs,
    );
    timer.unref();
    this.idleTimers.set(chat.sessionId, timer);
  }

  /**
   * After a restart: runs it interrupted go on from their journals (a question keeps its deadline);
   * without a journal, or with RESUME_INTERRUPTED_RUNS off, they are closed. A run whose ending is
   * already logged (its end could not be saved) never goes on, and is not ended twice. One run
   * that cannot be recovered does not keep the server from starting.
   */
  async recover(): Promise<{ resumed: number; closed: number }> {
    let resumed = 0;
    let closed = 0;
    for (const run of await this.store.listRunningRuns()) {
      try {
        const fate = await this.host.interrupted({ sessionId: run.sessionId, runId: run.id });
        // With several instances, a run another live instance holds is its own, not interrupted.
        if (fate === 'elsewhere') continue;
        const chat = await this.find(run.sessionId);
        if (!chat) continue;
        // Set up here already (Restate executed it sooner than this loop got to it): nothing to do.
        if (chat.activeRunId === run.id) continue;
        if (fate === 'close') {
          await chat.closeInterrupted(run);
          closed++;
        } else if ((await chat.recover(run)) === 'resumed') resumed++;
        else closed++;
        this.release(chat);
      } catch (error) {
        this.logger.error({ err: error, run_id: run.id, session_id: run.sessionId }, 'could not recover a run interrupted by a restart');
      }
    }
    if (resumed + closed > 0) this.logger.info({ resumed, closed }, 'recovered runs interrupted by a restart');
    return { resumed, closed };
  }

  /**
   * A run arrives here that no socket started here (its instance went away; Restate executes it
   * here after a restart): it is set up from the store as after a restart, or, when it has ended
   * or cannot go on, closed. Throws (the host tries again) while the session is busy with another run.
   */
  private async arrive(sessionId: string, runId: string): Promise<Arrival> {
    const run = await this.store.getRun(runId);
    const chat = await this.find(sessionId);
    if (!run || !chat || run.status !== 'running') return 'closed';
    if (chat.activeRunId !== undefined && chat.activeRunId !== runId) {
      throw new Error(`Session ${sessionId} is still busy with run ${chat.activeRunId}; tried again later`);
    }
    // Its admission claims the session for it (and throws, to be tried again, while another instance holds it).
    const outcome = await chat.recover(run);
    this.release(chat);
    return outcome;
  }

  /**
   * Whether `id` names a session: a stored one, or a live one nobody has written in yet, which is
   * stored now when the caller is about to write in it.
   */
  async exists(id: string, options: { write?: boolean } = {}): Promise<boolean> {
    const live = this.sessions.get(id);
    if (live) {
      if (options.write) await live.ensureStored();
      return true;
    }
    return (await this.store.getSession(id)) !== undefined;
  }

  /**
   * Deletes a session: its new messages are refused, its run is stopped (its clients hear the run
   * end), `remove` deletes what is stored, and then every socket still attached is told
   * (`session_deleted`) and closed. Meanwhile nobody can rejoin it: a rejoin starts a new session.
   */
  async delete(id: string, remove: () => Promise<void>): Promise<void> {
    this.deleting.add(id);
    try {
      const chat = this.sessions.get(id) ?? (await this.opening.get(id));
      if (chat) {
        chat.refuseMessages();
        await chat.stop('user');
        this.cancelEviction(id);
        this.drop(id);
      }
      await remove();
      chat?.log.closeAll({ type: 'session_deleted', session_id: id }, SESSION_DELETED_CLOSE_CODE, 'Session deleted');
    } finally {
      this.deleting.delete(id);
    }
  }

  /** Stops every active run (server shutdown) and waits for them to end. */
  async stopAll(reason: StopReason): Promise<void> {
    for (const timer of this.idleTimers.values()) clearTimeout(timer);
    this.idleTimers.clear();
    // Several instances, or Restate: a shutdown hands runs over (to the others, or to the next
    // attempt once this process is back) rather than stopping them; no run starts here any more.
    const handOver = reason === 'shutdown' && this.host.drain() === 'hand_over';
    await Promise.all([...this.sessions.values()].map((chat) => (handOver ? chat.handOver() : chat.stop(reason))));
  }

  private async find(id: string): Promise<ChatService | undefined> {
    if (this.deleting.has(id)) return undefined;
    const live = this.sessions.get(id);
    if (live) return live;
    // Two sockets rejoining at once must share one ChatService.
    let pending = this.opening.get(id);
    if (!pending) {
      pending = (async () => {
        const stored = await this.store.getSession(id);
        if (!stored || this.deleting.has(id)) return undefined;
        return (
          this.sessions.get(id) ??
          this.create(id, await this.store.lastSeq(id), { stored: true, owner: { id: stored.owner, name: stored.ownerName ?? undefined } })
        );
      })().finally(() => this.opening.delete(id));
      this.opening.set(id, pending);
    }
    return pending;
  }

  private create(id: string, lastSeq: number, options: { stored: boolean; owner?: SessionOwner } = { stored: true }): ChatService {
    const log = new SessionEventLog(id, this.store, lastSeq, this.observer);
    const chat = new ChatService(id, log, this.deps, options);
    this.sessions.set(id, chat);
    this.followOtherInstances(chat);
    return chat;
  }

  /** Drops a session from memory, and stops following it. */
  private drop(id: string): void {
    this.sessions.delete(id);
    this.unfollows.get(id)?.();
    this.unfollows.delete(id);
  }

  /**
   * Another instance may write this session's log (it runs the session's run): its events reach
   * this instance's sockets from the database, on its notice or, should one be lost, at the next
   * look, in seq order and without gaps. (In one process nothing else writes it: nothing is heard.)
   */
  private followOtherInstances(chat: ChatService): void {
    const { fanOut } = this;
    const { log, sessionId } = chat;
    log.onAppended = () => fanOut.notify(sessionId);
    // Previews stream to sockets on every instance: they are not logged, so they travel on their own.
    log.onPreview = (delta, afterSeq) => fanOut.publishPreview(sessionId, delta, afterSeq);
    // A database that fails a catch-up is told to the log, not to the process: the next notice or look tries again.
    const catchUp = () =>
      void log
        .syncFromStore()
        .catch((error: unknown) => this.logger.warn({ err: error, session_id: sessionId }, 'could not read the session log from the database'));
    let dropped = false;
    this.unfollows.set(sessionId, () => {
      dropped = true;
    });
    void fanOut
      .follow(sessionId, (notice) => {
        if (notice.kind === 'preview') log.relayPreview(notice.delta, notice.afterSeq);
        // A look finds what a lost notice would have said, for the sockets here, while no run here writes the log.
        else if (notice.kind === 'appended' || (log.connectionCount > 0 && !chat.busy)) catchUp();
      })
      .then(
        (stop) => {
          if (dropped) stop();
          else this.unfollows.set(sessionId, stop);
        },
        (error: unknown) => this.logger.warn({ err: error, session_id: sessionId }, 'could not follow a session across instances; looking it up meanwhile'),
      );
  }

  private cancelEviction(id: string): void {
    const timer = this.idleTimers.get(id);
    if (timer) clearTimeout(timer);
    this.idleTimers.delete(id);
  }
}
