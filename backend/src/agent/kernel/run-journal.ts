import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';
import type { Logger } from '../../logger.ts';
import type { JournalEntry } from '../../store/store.ts';
import type { ToolRegistry } from '../../tools/tool-registry.ts';
import type { EventSink } from './event-sink.ts';

export type { JournalEntry };

/**
 * Where a run's effects are recorded before it goes on (the store's journal by default; a
 * durable engine's later). Replaying it rebuilds the run: what is recorded is not done again.
 */
export interface RunJournal {
  read(runId: string): Promise<JournalEntry[]>;
  append(runId: string, entry: JournalEntry): Promise<void>;
  truncate(runId: string, fromPosition: number): Promise<void>;
  /**
   * True when entries and the events logged after them commit in that order (the store's journal:
   * one group commit for both); otherwise a run's events wait for the entries recorded before them.
   */
  readonly commitsWithEvents?: boolean;
}

/** The effect kinds the kernel records; strategies may record their own through `run.effects`. */
export const JOURNAL = {
  input: 'input',
  model: 'model',
  toolStarted: 'tool_started',
  tool: 'tool',
  question: 'question',
  answer: 'answer',
  /** An answer given while the run was parked, keyed by its question's id: the question takes it when the run goes on. */
  keptAnswer: 'kept_answer',
} as const;

/** What a run goes on from: the journal and logged events of an earlier execution of it (or of the run it continues). */
export interface RunPast {
  /** The run the entries are from: this run after a restart, or the run this one continues. */
  runId: string;
  /** Its journal, the input entry left out. */
  entries: JournalEntry[];
  /** The events its strategy logged (agent_start and the ending left out), in order. */
  events: LoggedEventBody[];
}

/**
 * Effects keyed by their own call's or question's id: unique, so a past entry can only ever match
 * its own effect, and one missing (a tool still running, a question not yet answered when the
 * server stopped) does not end the replay of the others, which went on side by side.
 */
const CONCURRENT_KINDS = new Set<string>([JOURNAL.toolStarted, JOURNAL.tool, JOURNAL.question, JOURNAL.answer, JOURNAL.keptAnswer]);

/**
 * One execution's view of its journal: each effect runs once. While the past has an entry of the
 * same kind and key, its recorded value is returned and nothing is done. The first sequential
 * effect (a model call, a question) the past does not have ends the replay: what is left of the
 * past went another way and is dropped. A tool result the past lacks does not end it, since the
 * calls of one act phase run side by side and finish in any order. A continuation copies its
 * whole past into its own journal first, so it can itself be replayed (or continued) from any
 * point, also when it is stopped in the middle of its replay.
 */
export class JournalReplay {
  private pending: JournalEntry[];
  private next: number;
  /** Entries recorded live since the replay began (re-recorded if a later truncation drops them). */
  private readonly recordedLive: JournalEntry[] = [];
  /** Past entries replayed so far (re-recorded if a later truncation drops them). */
  private readonly replayed: JournalEntry[] = [];
  /** Leaving the past, one branch at a time: two at once could write back what the other dropped. */
  private leaving: Promise<void> = Promise.resolve();
  private readonly copy: boolean;

  constructor(
    private readonly journal: RunJournal,
    private readonly runId: string,
    past: RunPast | undefined,
    /** The run's step now: each entry says in which step it was made, so a run can be rewound to a step. */
    private readonly step: () => number = () => 0,
  ) {
    this.copy = past !== undefined && past.runId !== runId;
    // A continuation's past is renumbered from 1 under its own id (see recordInput).
    this.pending = (past?.entries ?? []).map((entry, index) => (this.copy ? { ...entry, position: index + 1 } : { ...entry }));
    this.next = Math.max(0, ...this.pending.map((entry) => entry.position)) + 1;
  }

  /** True while the run is going through its past. */
  get replaying(): boolean {
    return this.pending.length > 0;
  }

  /** Whether the past still holds this effect (it will be replayed, not done). */
  has(kind: string, key: string): boolean {
    return this.pending.some((entry) => entry.kind === kind && entry.key === key);
  }

  /** Records the run's input (position 0) and, for a continuation, the past it goes on from. */
  async recordInput(input: unknown): Promise<void> {
    await this.journal.append(this.runId, { position: 0, kind: JOURNAL.input, key: JOURNAL.input, value: input });
    if (this.copy) for (const entry of this.pending) await this.journal.append(this.runId, entry);
  }

  /**
   * Runs `live` once: a past entry of this kind and key is returned instead. The new entry is
   * appended without waiting for its commit (the journal commits in order, a model call's result
   * with the events that show it, while the run goes on to its next model call); `durable` waits
   * for it and everything recorded before it, as an effect on the world needs before it is made
   * (a tool's start). A write that failed is thrown by the next `once` or `settled`.
   */
  async once<T>(
    kind: string,
    key: string,
    live: () => Promise<T>,
    options: {
      /** Wait for this entry's commit, and everything recorded before it, before going on. */
      durable?: boolean;
      /** Run `live` only once everything recorded before it is committed (it may act on the world). */
      afterCommitted?: boolean;
    } = {},
  ): Promise<{ value: T; replayed: boolean }> {
    this.throwFailure();
    const index = this.pending.findIndex((entry) => entry.kind === kind && entry.key === key);
    if (index >= 0) {
      const [entry] = this.pending.splice(index, 1);
      this.replayed.push(entry!);
      return { value: entry!.value as T, replayed: true };
    }
    if (this.pending.length > 0 && !CONCURRENT_KINDS.has(kind)) {
      const leave = this.leaving.then(() => this.leavePast(branchOf(key)));
      this.leaving = leave.catch(() => undefined);
      await leave;
    }
    if (options.afterCommitted) await this.settled();
    const value = await live();
    const entry = { position: this.next++, kind, key, value: value ?? null, step: this.step() };
    // Noted before it is written: a truncation queued after this append re-records it.
    if (this.pending.length > 0) this.recordedLive.push(entry);
    this.track(this.journal.append(this.runId, entry));
    if (options.durable) await this.settled();
    return { value, replayed: false };
  }

  /** Appends not yet known to be committed. */
  private readonly writing = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  private track(append: Promise<void>): void {
    const tracked = append.then(
      () => void this.writing.delete(tracked),
      (error: unknown) => {
        this.writing.delete(tracked);
        this.failure ??= { error };
      },
    );
    this.writing.add(tracked);
  }

  private throwFailure(): void {
    const failure = this.failure;
    if (failure) throw failure.error;
  }

  /** Resolves once the entries appended so far are committed or failed (without saying which). */
  async appendsSoFar(): Promise<void> {
    await Promise.all(this.writing);
  }

  /** Resolves once every entry appended so far is committed; rejects with the first that could not be. */
  async settled(): Promise<void> {
    while (this.writing.size > 0) await Promise.all(this.writing);
    this.throwFailure();
  }

  /**
   * The run went another way than its past: what is left of the past is dropped from the journal.
   * Within a branch (a research task, keyed `purpose@node`), only that branch went another way:
   * the rest of the past (other branches', recorded side by side with it, and effects keyed by a
   * call's own id) stays to be replayed.
   */
  private async leavePast(branch: string | undefined): Promise<void> {
    // What stays: other named branches' past, and effects keyed by their own call's id; the run's
    // own sequence (unbranched calls such as a final synthesis) went another way with the branch.
    const stays = (entry: JournalEntry) => {
      if (branch === undefined) return false;
      const other = branchOf(entry.key);
      return other === undefined ? CONCURRENT_KINDS.has(entry.kind) : other !== branch;
    };
    const dropped = this.pending.filter((entry) => !stays(entry));
    if (dropped.length === 0) return;
    const from = Math.min(...dropped.map((entry) => entry.position));
    this.pending = this.pending.filter(stays);
    // Everything else past that point is written again after the truncation: what was replayed
    // already, what was recorded live meanwhile (tools of the same act phase), the past that stays.
    const keep = new Map<number, JournalEntry>();
    for (const entry of [...this.replayed, ...this.recordedLive, ...this.pending]) if (entry.position >= from) keep.set(entry.position, entry);
    await this.journal.truncate(this.runId, from);
    for (const entry of [...keep.values()].sort((a, b) => a.position - b.position)) await this.journal.append(this.runId, entry);
  }
}

/** The run's sink while it goes on from a past: what the past logged is not logged again. */
export class ReplaySink implements EventSink {
  /** The past's events not yet met again, by their content. */
  private readonly unmet = new Map<string, number>();

  constructor(
    private readonly sink: EventSink,
    past: LoggedEventBody[],
  ) {
    for (const event of past) {
      const key = canonical(event);
      this.unmet.set(key, (this.unmet.get(key) ?? 0) + 1);
    }
  }

  /**
   * An event the past logged already (the same content, whichever run, seq and time) is not logged
   * again, in whatever order it comes (tools of one phase finish in any order); anything else is.
   */
  async emit(event: LoggedEventBody): Promise<void> {
    const key = canonical(event);
    const left = this.unmet.get(key) ?? 0;
    if (left > 0) {
      this.unmet.set(key, left - 1);
      return;
    }
    await this.sink.emit(event);
  }

  flush(): Promise<void> {
    return this.sink.flush();
  }

  preview(delta: DeltaEvent): void {
    this.sink.preview(delta);
  }

  progress(event: ToolProgressEvent): void {
    this.sink.progress(event);
  }
}

/** The branch an effect belongs to: the node of a `purpose@node` key; none for the run's own sequence. */
function branchOf(key: string): string | undefined {
  const at = key.lastIndexOf('@');
  return at < 0 ? undefined : key.slice(at + 1);
}

function canonical(event: LoggedEventBody): string {
  const { run_id: _run, seq: _seq, ts: _ts, ...rest } = event as LoggedEventBody & { seq?: number; ts?: string };
  return JSON.stringify(rest, Object.keys(rest).sort());
}

/**
 * The tool registry as a run sees it: each call's result is recorded, and a call the past already
 * finished is not made again. A call that was started but never recorded (the server stopped
 * during it) is made again, and the log says it may have run twice.
 */
export function journaledTools(tools: ToolRegistry, replay: JournalReplay, logger: Logger): ToolRegistry {
  const journaled = Object.create(tools) as ToolRegistry;
  journaled.execute = async (call, enabled, context) => {
    const key = `${call.name}:${(call as { id?: string }).id ?? ''}`;
    // Committed before the tool runs, with everything recorded before it (the model call that asked for it).
    const started = await replay.once(JOURNAL.toolStarted, key, async () => true, { durable: true });
    const result = await replay.once(JOURNAL.tool, key, () => tools.execute(call, enabled, context));
    if (started.replayed && !result.replayed) {
      logger.warn({ tool: call.name, call_id: (call as { id?: string }).id }, 'tool call made again: the server stopped during it, so it may have run twice');
    }
    return result.value;
  };
  return journaled;
}
