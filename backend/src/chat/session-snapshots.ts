import { randomUUID } from 'node:crypto';
import type { AgentStart, LoggedEvent, SnapshotInfo } from '@stepwise/shared-types';
import { JOURNAL } from '../agent/kernel/run-journal.ts';
import type { RunInput } from '../agent/kernel/strategy.ts';
import type { MessageRecord, RunRecord, SnapshotRecord } from '../store/store.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { strategyEventsOf } from './run-endings.ts';
import type { SessionEventLog } from './session-event-log.ts';
import { nextBudget, PLAIN_CHAT, type RunPastWithHistory, trimToBudget } from './session-runs.ts';

const SCAN_PAGE_SIZE = 1_000;
/** The most snapshots (saved, and those rollbacks keep) one session may hold: each is a copy of its history. */
export const SNAPSHOTS_PER_SESSION = 100;

/** The session holds SNAPSHOTS_PER_SESSION snapshots already: nothing was saved or rolled back. */
export class SnapshotLimitError extends Error {
  constructor() {
    super(`This chat holds ${SNAPSHOTS_PER_SESSION} snapshots, the most one chat may keep (a rollback keeps one too); start a new chat to keep more`);
  }
}
const STEP_POINT = /^step:([0-9a-f-]{36}):(\d+)$/i;

/** A restore point or a snapshot, found: what the session's history becomes, and the run to go on with. */
interface Target {
  id: string;
  label: string;
  atSeq: number;
  messages: MessageRecord[];
  /** For a step's end: the run and the step; for a snapshot: the session's last run then. */
  run?: RunRecord | undefined;
  step?: number | undefined;
}

/**
 * A session's snapshots and restore points. A snapshot is the working state (the model's history)
 * as it was, immutable; what it shares with the snapshot before it is kept once. The end of every
 * step of every agent run is a restore point. Rolling back makes one the working state again (the
 * log stays as it was and records the rollback; the state before is kept as a snapshot of kind
 * `rollback`); resuming from one rolls back and goes on with its run from there, through the run
 * journal.
 */
export class SessionSnapshots {
  constructor(
    private readonly sessionId: string,
    private readonly log: SessionEventLog,
    private readonly deps: Pick<ChatDependencies, 'store' | 'config' | 'kernel'>,
  ) {}

  /** Keeps a copy of the working state; logs `snapshot_saved`. */
  async save(label: string | undefined): Promise<SnapshotRecord> {
    const snapshot = await this.keep(
      'manual',
      label?.trim() || `Snapshot of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC${await this.workingPoint()}`,
    );
    await this.log.record({ type: 'snapshot_saved', snapshot_id: snapshot.id, label: snapshot.label, at_seq: snapshot.atSeq });
    return snapshot;
  }

  /**
   * Where the session's work stands, for a snapshot's default label: a staged solver's loop and
   * last stage (" · loop 2 · expert_evaluator"), '' for other strategies.
   */
  private async workingPoint(): Promise<string> {
    const run = await this.deps.store.lastRun(this.sessionId);
    const label = run && this.deps.kernel.sessionHooks(run.strategy)?.snapshotLabel;
    return run && label ? label(await strategyEventsOf(this.deps.store, run)) : '';
  }

  /** Snapshots and restore points, in the order of the log. */
  list(): Promise<SnapshotInfo[]> {
    return listSnapshots(this.deps.store, this.sessionId);
  }

  /**
   * Makes a snapshot or restore point the working state; logs `session_rolled_back`. Resolves with
   * what it rolled back to, or undefined when there is no such snapshot in this session.
   */
  async rollback(id: string): Promise<Target | undefined> {
    const target = await this.find(id);
    if (!target) return undefined;
    const before = await this.keep('rollback', `Before rolling back to “${target.label}”`);
    await this.deps.store.replaceMessages(this.sessionId, target.messages);
    await this.log.record({ type: 'session_rolled_back', snapshot_id: target.id, new_snapshot_id: before.id, to_seq: target.atSeq });
    return target;
  }

  /**
   * What resuming from a snapshot or restore point would start, checked before anything changes:
   * its run, replayed up to the step (a restore point) or to its end (a snapshot), with `extra`
   * more steps. A run that answered cannot go on from its end, only from one of its steps.
   */
  async resumable(
    id: string,
    extra: number | undefined,
  ): Promise<
    | { ok: true; input: Omit<RunInput, 'runId'>; past: RunPastWithHistory; target: Target }
    | { ok: false; code: 'unknown_snapshot' | 'not_resumable'; message: string }
  > {
    const target = await this.find(id);
    if (!target) return { ok: false, code: 'unknown_snapshot', message: `No snapshot "${id.slice(0, 100)}" in this chat` };
    const run = target.run;
    if (!run || run.strategy === PLAIN_CHAT) return { ok: false, code: 'not_resumable', message: 'Nothing to resume there: the snapshot has no agent run' };
    if (!this.deps.kernel.has(run.strategy)) return { ok: false, code: 'not_resumable', message: `Strategy "${run.strategy}" is not available` };
    const entries = await this.deps.store.readJournal(run.id);
    const inputEntry = entries.find((entry) => entry.kind === JOURNAL.input);
    if (!inputEntry) return { ok: false, code: 'not_resumable', message: 'That run was recorded before runs could be resumed' };
    const upTo = target.step ?? run.steps ?? Number.MAX_SAFE_INTEGER;
    if (target.step === undefined && run.status === 'completed' && (await this.answered(run))) {
      return { ok: false, code: 'not_resumable', message: 'That run answered; resume from one of its steps instead' };
    }
    const events = await strategyEventsOf(this.deps.store, run, { upToSeq: target.atSeq });
    const question = target.messages.findLastIndex((record) => record.message.role === 'user');
    const { maxStepsDefault, maxStepsLimit } = this.deps.config.agent;
    const journaled = inputEntry.value as Omit<RunInput, 'sessionId' | 'history'>;
    return {
      ok: true,
      target,
      input: {
        ...journaled,
        strategy: run.strategy,
        sessionId: this.sessionId,
        history: trimToBudget(
          target.messages.slice(0, Math.max(0, question)).map((record) => record.message),
          this.deps.config.agent.contextBudgetChars,
        ),
        // A run that failed or was stopped keeps its budget; a rewind of one that ended goes on with new steps.
        maxSteps: nextBudget(run.status === 'completed' ? undefined : journaled.maxSteps, upTo, extra, Math.max(1, extra ?? maxStepsDefault), maxStepsLimit),
      },
      past: {
        runId: run.id,
        entries: entries.filter((entry) => entry !== inputEntry && (entry.step ?? 0) <= upTo),
        events,
        storedMessages: target.messages.length - (question + 1),
      },
    };
  }

  /**
   * Saves the working state as a snapshot. What it shares with the session's latest snapshot (the
   * history up to where they part) is kept once: the new one names that snapshot and holds only
   * the messages after the shared part.
   */
  private async keep(kind: SnapshotRecord['kind'], label: string): Promise<SnapshotRecord> {
    const { store } = this.deps;
    // Its point in the log is after every event emitted so far.
    await this.log.sent();
    const snapshots = await store.listSnapshots(this.sessionId);
    if (snapshots.length >= SNAPSHOTS_PER_SESSION) throw new SnapshotLimitError();
    const last = await store.lastRun(this.sessionId);
    const messages = await store.listMessages(this.sessionId);
    const latest = snapshots.at(-1);
    const shared = latest ? sharedPrefix(await this.messagesOf(latest.id), messages) : 0;
    return store.saveSnapshot({
      id: randomUUID(),
      sessionId: this.sessionId,
      label: label.slice(0, 200),
      kind,
      runId: last?.id,
      step: last?.steps ?? undefined,
      atSeq: this.log.lastSeq,
      messages: messages.slice(shared),
      ...(latest && shared > 0 ? { base: { id: latest.id, count: shared } } : {}),
    });
  }

  /** A snapshot's whole history: the shared part of its base (followed back; bases are older snapshots of the session), then its own. */
  private async messagesOf(id: string, depth = 0): Promise<MessageRecord[]> {
    const snapshot = await this.deps.store.getSnapshot(id);
    if (!snapshot) return [];
    if (!snapshot.base || depth >= SNAPSHOTS_PER_SESSION) return snapshot.messages;
    const base = await this.messagesOf(snapshot.base.id, depth + 1);
    return [...base.slice(0, snapshot.base.count), ...snapshot.messages];
  }

  /** A snapshot of this session, or the end of a step of one of its runs. */
  private async find(id: string): Promise<Target | undefined> {
    const point = STEP_POINT.exec(id);
    if (!point) {
      const snapshot = await this.deps.store.getSnapshot(id);
      if (!snapshot || snapshot.sessionId !== this.sessionId) return undefined;
      const run = snapshot.runId ? await this.deps.store.getRun(snapshot.runId) : undefined;
      return { id, label: snapshot.label, atSeq: snapshot.atSeq, messages: await this.messagesOf(id), run };
    }
    const [, runId, stepText] = point;
    const step = Number(stepText);
    const run = await this.deps.store.getRun(runId!);
    if (!run || run.sessionId !== this.sessionId) return undefined;
    const end = (await stepEnds(this.deps.store, this.sessionId)).find((candidate) => candidate.runId === run.id && candidate.step === step);
    if (!end) return undefined;
    // The history up to the run's question: the run's steps are its journal's, replayed on resume.
    const messages = await this.deps.store.listMessages(this.sessionId);
    const question = messages.findLastIndex((record) => record.message.role === 'user' && record.afterSeq < end.startSeq);
    return { id, label: `End of step ${step}`, atSeq: end.seq, messages: messages.slice(0, question + 1), run, step };
  }

  private async answered(run: RunRecord): Promise<boolean> {
    const events = await strategyEventsWithSeq(this.deps.store, run, true);
    return events.some(
      (event) => event.type === 'agent_update' && event.update_type === 'agent_completion' && event.reason !== 'max_steps' && event.reason !== 'unresolved',
    );
  }
}

/** A run's logged events with their seq (its start and ending left out unless `all`). */
async function strategyEventsWithSeq(store: ChatDependencies['store'], run: RunRecord, all = false): Promise<LoggedEvent[]> {
  const found: LoggedEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await store.listEvents(run.sessionId, after, SCAN_PAGE_SIZE);
    for (const event of page) {
      if (event.run_id !== run.id) continue;
      const kind = event.type === 'agent_update' ? event.update_type : event.type;
      if (!all && ['agent_start', 'agent_completion', 'agent_stopped', 'agent_error', 'assistant_message', 'response_complete'].includes(kind)) continue;
      found.push(event);
    }
    if (page.length < SCAN_PAGE_SIZE) return found;
    after = page.at(-1)!.seq;
  }
}

/** A session's snapshots and restore points (the end of every step of its agent runs), in the order of its log. */
export async function listSnapshots(store: ChatDependencies['store'], sessionId: string): Promise<SnapshotInfo[]> {
  const saved = (await store.listSnapshots(sessionId)).map(
    (snapshot): SnapshotInfo => ({
      snapshot_id: snapshot.id,
      label: snapshot.label,
      kind: snapshot.kind,
      run_id: snapshot.runId ?? null,
      step: snapshot.step ?? null,
      at_seq: snapshot.atSeq,
      created_at: snapshot.createdAt,
    }),
  );
  const ends = await stepEnds(store, sessionId);
  const names = await runNames(store, sessionId, new Set(ends.map((end) => end.runId)));
  const points = ends.map(
    ({ runId, step, seq, ts }): SnapshotInfo => ({
      snapshot_id: `step:${runId}:${step}`,
      label: `End of step ${step} · ${names.get(runId) ?? 'a run'}`,
      kind: 'step',
      run_id: runId,
      step,
      at_seq: seq,
      created_at: ts,
    }),
  );
  return [...saved, ...points].sort((a, b) => a.at_seq - b.at_seq || a.created_at.localeCompare(b.created_at));
}

/** Each run by its place in the chat and its request ("run 2: What is 12*7?"), so a step's restore point says whose step it is. */
async function runNames(store: ChatDependencies['store'], sessionId: string, runIds: Set<string>): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const runs = (await store.listRuns(sessionId)).filter((run) => run.strategy !== PLAIN_CHAT);
  for (const [index, run] of runs.entries()) {
    if (!runIds.has(run.id)) continue;
    const input = (await store.readJournal(run.id)).find((entry) => entry.kind === JOURNAL.input)?.value as { question?: unknown } | undefined;
    const question = typeof input?.question === 'string' ? input.question.replace(/\s+/g, ' ').trim() : '';
    names.set(run.id, `run ${index + 1}${question ? `: “${question.length > 60 ? `${question.slice(0, 60)}…` : question}”` : ''}`);
  }
  return names;
}

/** The end of every step (its agent_observe) of every agent run, with where its run began. */
async function stepEnds(
  store: ChatDependencies['store'],
  sessionId: string,
): Promise<Array<{ runId: string; step: number; seq: number; ts: string; startSeq: number }>> {
  const starts = new Map<string, AgentStart>();
  const ends: Array<{ runId: string; step: number; seq: number; ts: string; startSeq: number }> = [];
  let after = 0;
  for (;;) {
    const page: LoggedEvent[] = await store.listEvents(sessionId, after, SCAN_PAGE_SIZE);
    for (const event of page) {
      if (event.type !== 'agent_update' || !event.run_id) continue;
      if (event.update_type === 'agent_start') starts.set(event.run_id, event);
      if (event.update_type === 'agent_observe' && event.node_id === undefined) {
        // A continued run's question is its first run's: follow resumed_from back.
        let root = starts.get(event.run_id);
        while (root?.resumed_from && starts.has(root.resumed_from)) root = starts.get(root.resumed_from);
        ends.push({ runId: event.run_id, step: event.step, seq: event.seq, ts: event.ts, startSeq: root?.seq ?? event.seq });
      }
    }
    if (page.length < SCAN_PAGE_SIZE) return ends;
    after = page.at(-1)!.seq;
  }
}

/** How many first messages two histories share. */
function sharedPrefix(earlier: MessageRecord[], now: MessageRecord[]): number {
  let shared = 0;
  while (shared < earlier.length && shared < now.length && JSON.stringify(earlier[shared]) === JSON.stringify(now[shared])) shared++;
  return shared;
}
