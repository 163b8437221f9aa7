import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';
import type { Logger } from '../logger.ts';
import type { JournalEntry } from '../store/store.ts';
import type { ToolRegistry } from '../tools/tool-registry.ts';
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
}

/** The effect kinds the kernel records; strategies may record their own through `run.effects`. */
export const JOURNAL = { input: 'input', model: 'model', toolStarted: 'tool_started', tool: 'tool', question: 'question', answer: 'answer' } as const;

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
 * One execution's view of its journal: each effect runs once. While the past has an entry of the
 * same kind and key, its recorded value is returned and nothing is done; the first effect the past
 * does not have ends the replay (a past that went another way from there is dropped) and from then
 * on every effect is done and recorded before the run goes on.
 */
export class JournalReplay {
  private pending: JournalEntry[];
  private next: number;

  constructor(
    private readonly journal: RunJournal,
    private readonly runId: string,
    past: RunPast | undefined,
    /** The run's step now: each entry says in which step it was made, so a run can be rewound to a step. */
    private readonly step: () => number = () => 0,
  ) {
    this.pending = [...(past?.entries ?? [])];
    // A continuation records the past it goes through under its own id, so it can be replayed in turn.
    this.copy = past !== undefined && past.runId !== runId;
    this.next = this.copy ? 1 : Math.max(0, ...(past?.entries ?? []).map((entry) => entry.position)) + 1;
  }

  private readonly copy: boolean;

  /** True while the run is going through its past. */
  get replaying(): boolean {
    return this.pending.length > 0;
  }

  /** Whether the past still holds this effect (it will be replayed, not done). */
  has(kind: string, key: string): boolean {
    return this.pending.some((entry) => entry.kind === kind && entry.key === key);
  }

  /** Records the run's input (position 0). */
  async recordInput(input: unknown): Promise<void> {
    await this.journal.append(this.runId, { position: 0, kind: JOURNAL.input, key: JOURNAL.input, value: input });
  }

  async once<T>(kind: string, key: string, live: () => Promise<T>): Promise<{ value: T; replayed: boolean }> {
    const index = this.pending.findIndex((entry) => entry.kind === kind && entry.key === key);
    if (index >= 0) {
      const [entry] = this.pending.splice(index, 1);
      if (this.copy) await this.journal.append(this.runId, { ...entry!, position: this.next++ });
      return { value: entry!.value as T, replayed: true };
    }
    if (this.pending.length > 0) {
      // The run went another way than its past: what is left of the past is not this run's any more.
      if (!this.copy) await this.journal.truncate(this.runId, Math.min(...this.pending.map((entry) => entry.position)));
      this.next = this.copy ? this.next : Math.min(this.next, ...this.pending.map((entry) => entry.position));
      this.pending = [];
    }
    const value = await live();
    await this.journal.append(this.runId, { position: this.next++, kind, key, value: value ?? null, step: this.step() });
    return { value, replayed: false };
  }
}

/**
 * The run's sink while it goes through its past: an event the past already logged (the same event,
 * in the same order) is not logged again; from the first one that differs, everything goes through.
 */
export class ReplaySink implements EventSink {
  private index = 0;

  constructor(
    private readonly sink: EventSink,
    private readonly past: LoggedEventBody[],
  ) {}

  async emit(event: LoggedEventBody): Promise<void> {
    // Events the past logged from inside a replayed effect (a tool's own question) are not emitted
    // again, so the match may be a little further on.
    const end = Math.min(this.past.length, this.index + LOOK_AHEAD);
    for (let at = this.index; at < end; at++) {
      if (!sameEvent(this.past[at]!, event)) continue;
      this.index = at + 1;
      return;
    }
    this.index = this.past.length;
    await this.sink.emit(event);
  }

  preview(delta: DeltaEvent): void {
    this.sink.preview(delta);
  }

  progress(event: ToolProgressEvent): void {
    this.sink.progress(event);
  }
}

const LOOK_AHEAD = 8;

/** Two events are the same when they say the same, whichever run, seq and time they carry. */
function sameEvent(a: LoggedEventBody, b: LoggedEventBody): boolean {
  return canonical(a) === canonical(b);
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
    const started = await replay.once(JOURNAL.toolStarted, key, async () => true);
    const result = await replay.once(JOURNAL.tool, key, () => tools.execute(call, enabled, context));
    if (started.replayed && !result.replayed) {
      logger.warn({ tool: call.name, call_id: (call as { id?: string }).id }, 'tool call made again: the server stopped during it, so it may have run twice');
    }
    return result.value;
  };
  return journaled;
}
