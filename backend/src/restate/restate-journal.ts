import { randomUUID } from 'node:crypto';
import type { WorkflowContext } from '@restatedev/restate-sdk';
import type { PersonAnswer } from '@stepwise/shared-types';
import type { AnswerLedger } from '../agent/kernel/agent-control.ts';
import type { JournalEntry, RunJournal } from '../agent/kernel/run-journal.ts';
import { raceAbort } from '../util/abort.ts';
import { restateSdk } from './restate-sdk.ts';

/**
 * One record of a run's journal in Restate's: an entry, a truncation, where an attempt began, or
 * the durable-promise operations that follow it (a look for an answer, an answer given), which a
 * new attempt takes again in their place.
 */
type JournalRecord =
  | { op: 'append'; entry: JournalEntry }
  /** Entries appended while the step before was under way, taken as one step. */
  | { op: 'appends'; entries: JournalEntry[] }
  | { op: 'truncate'; from: number }
  | { op: 'attempt'; id: string }
  | { op: 'peek'; questionId: string }
  | { op: 'settle'; questionId: string; answer: PersonAnswer };

/** Every record is one `ctx.run` step of this name: Restate checks names on replay, so they never differ. */
const STEP = 'journal';

/** Thrown by the journal once Restate has cancelled the workflow (a stop sent to Restate itself). */
export class RunCancelledError extends Error {
  constructor() {
    super('The run was cancelled in Restate');
    this.name = 'RunCancelledError';
  }
}

/**
 * The RunJournal's Restate adapter: each effect a run records (a model call's result, a tool's,
 * a question, an answer) is one journaled `ctx.run` step of the run's workflow, committed in
 * Restate before the run goes on; the store keeps a copy for what looks back at a run (continue,
 * rewind, snapshots).
 *
 * Restate replays a workflow's steps by position, and a run's effects happen side by side (a
 * wave's tasks, a phase's tools) in an order that depends on timing. So the steps are taken one
 * at a time, in the order the effects finish, and a new attempt first reads every step recorded
 * so far, up to a marker of its own (`open`), before the run takes any: the run then goes on from
 * what it read by kind and key (JournalReplay), and the order of the past never has to be taken
 * again. Answers to questions are durable promises of the workflow, one per question id.
 */
export class RestateJournal implements RunJournal {
  private chain: Promise<unknown> = Promise.resolve();
  private cancelled = false;
  /** What to throw once Restate has cancelled the run (the engine stops the run and throws its abort). */
  onCancelled: (() => Error) | undefined;
  /** What to throw once this attempt has ended under the run (the engine hands the run over and throws its abort). */
  onAttemptEnded: (() => Error) | undefined;

  private constructor(
    private readonly ctx: WorkflowContext,
    private readonly copy: RunJournal,
    private entries: JournalEntry[],
  ) {}

  /** Ends when this attempt does: Restate's own promises never settle after that. */
  private get attempt(): AbortSignal {
    return this.ctx.request().attemptCompletedSignal;
  }

  private attemptEnded(): Error {
    return this.onAttemptEnded?.() ?? new Error('The attempt ended; the run goes on in the next one');
  }

  /**
   * Reads what earlier attempts recorded and brings the store's copy in line with it (a run that
   * began before Restate ran it has its store journal taken over instead). Rejects with
   * RunCancelledError when the workflow was cancelled meanwhile.
   */
  static async open(ctx: WorkflowContext, copy: RunJournal, runId: string): Promise<RestateJournal> {
    const attempt = randomUUID();
    let entries: JournalEntry[] = [];
    let recorded = 0;
    for (;;) {
      const record = await step(ctx, () => ({ op: 'attempt', id: attempt }) as JournalRecord);
      if (record.op === 'attempt') {
        if (record.id === attempt) break;
        continue;
      }
      recorded++;
      try {
        if (record.op === 'peek') await peekAnswer(ctx, record.questionId);
        else if (record.op === 'settle') await settleAnswer(ctx, record.questionId, record.answer);
        else entries = applyRecord(entries, record);
      } catch (error) {
        if (error instanceof restateSdk().CancelledError) throw new RunCancelledError();
        throw error;
      }
    }
    entries.sort((a, b) => a.position - b.position);
    const journal = new RestateJournal(ctx, copy, entries);
    const stored = await copy.read(runId);
    if (recorded === 0 && stored.length > 0) {
      // Begun before Restate ran it (another engine, or a first attempt that failed before its
      // first step): its store journal is its past.
      for (const entry of stored) await journal.record({ op: 'append', entry });
      journal.entries = stored;
    } else if (!sameEntries(stored, entries)) {
      const from = firstDifference(stored, entries);
      await copy.truncate(runId, from);
      for (const entry of entries) if (entry.position >= from) await copy.append(runId, entry);
    }
    return journal;
  }

  /** The journal as Restate holds it: what the run goes on from. */
  get recorded(): JournalEntry[] {
    return [...this.entries];
  }

  async read(): Promise<JournalEntry[]> {
    return this.recorded;
  }

  /**
   * Appends come from a run that does not wait for each (see JournalReplay): those made while a
   * step is under way are taken together as the next step, one round trip to Restate for all.
   */
  async append(runId: string, entry: JournalEntry): Promise<void> {
    let batch = this.batch;
    if (!batch) {
      const entries: JournalEntry[] = [];
      const taken = this.serial(() => {
        // Closed once it is taken: what is appended from now on goes in the next step.
        if (this.batch === batch) this.batch = undefined;
        return step(this.ctx, () => (entries.length === 1 ? { op: 'append', entry: entries[0]! } : { op: 'appends', entries }));
      });
      batch = this.batch = { entries, taken };
    }
    batch.entries.push(entry);
    await batch.taken;
    this.entries.push(entry);
    await this.copy.append(runId, entry);
  }

  /** Appends waiting for the step they go in. */
  private batch: { entries: JournalEntry[]; taken: Promise<JournalRecord> } | undefined;

  async truncate(runId: string, fromPosition: number): Promise<void> {
    await this.record({ op: 'truncate', from: fromPosition });
    this.entries = applyRecord(this.entries, { op: 'truncate', from: fromPosition });
    await this.copy.truncate(runId, fromPosition);
  }

  /** Answers as durable promises of this workflow, one per question id. */
  answers(): AnswerLedger {
    return {
      peek: (questionId) =>
        this.serialAfterAppends(async () => {
          await step(this.ctx, () => ({ op: 'peek', questionId }));
          return peekAnswer(this.ctx, questionId);
        }),
      settle: (questionId, answer) =>
        this.serialAfterAppends(async () => {
          await step(this.ctx, () => ({ op: 'settle', questionId, answer }));
          return settleAnswer(this.ctx, questionId, answer);
        }),
    };
  }

  private record(record: JournalRecord): Promise<JournalRecord> {
    // Appended after this record, not before it: a later append starts a step of its own.
    this.batch = undefined;
    return this.serial(() => step(this.ctx, () => record));
  }

  /** An operation after every append made so far (a later append starts a step of its own). */
  private serialAfterAppends<T>(operation: () => Promise<T>): Promise<T> {
    this.batch = undefined;
    return this.serial(operation);
  }

  /** One Restate operation at a time, each awaited before the next begins: their order is this chain's. */
  private serial<T>(operation: () => Promise<T>): Promise<T> {
    const next = this.chain.then(() => {
      if (this.cancelled) throw this.onCancelled?.() ?? new RunCancelledError();
      if (this.attempt.aborted) throw this.attemptEnded();
      // Restate's promises never settle once the attempt has ended: nothing queued may wait on them.
      return raceAbort(operation(), this.attempt).catch((error: unknown) => {
        if (this.attempt.aborted) throw this.attemptEnded();
        if (error instanceof restateSdk().CancelledError || error instanceof RunCancelledError) {
          this.cancelled = true;
          throw this.onCancelled?.() ?? new RunCancelledError();
        }
        throw error;
      });
    });
    this.chain = next.catch(() => undefined);
    return next;
  }
}

/** The durable promise that holds the answer to a question. */
export function answerKey(questionId: string): string {
  return `answer:${questionId}`;
}

async function peekAnswer(ctx: WorkflowContext, questionId: string): Promise<PersonAnswer | undefined> {
  const recorded = await ctx.promise<PersonAnswer | string>(answerKey(questionId)).peek();
  return recorded === undefined || recorded === null ? undefined : recordedAnswer(recorded);
}

/** An answer as a durable promise holds it: typed, or (recorded before answers were typed) its words. */
function recordedAnswer(recorded: PersonAnswer | string): PersonAnswer {
  return typeof recorded === 'string' ? { kind: 'text', text: recorded } : recorded;
}

/** Records `answer` unless the question was answered already (the first answer stands); resolves with the one recorded. */
async function settleAnswer(ctx: WorkflowContext, questionId: string, answer: PersonAnswer): Promise<PersonAnswer> {
  const promise = ctx.promise<PersonAnswer | string>(answerKey(questionId));
  try {
    await promise.resolve(answer);
  } catch (error) {
    if (!(error instanceof restateSdk().TerminalError) || error instanceof restateSdk().CancelledError) throw error;
  }
  return recordedAnswer(await promise.get());
}

async function step(ctx: WorkflowContext, record: () => JournalRecord): Promise<JournalRecord> {
  try {
    return await ctx.run<JournalRecord>(STEP, async () => record());
  } catch (error) {
    if (error instanceof restateSdk().CancelledError) throw new RunCancelledError();
    throw error;
  }
}

function applyRecord(entries: JournalEntry[], record: JournalRecord): JournalEntry[] {
  if (record.op === 'append') return [...entries.filter((entry) => entry.position !== record.entry.position), record.entry];
  if (record.op === 'appends') return record.entries.reduce((all, entry) => applyRecord(all, { op: 'append', entry }), entries);
  if (record.op === 'truncate') return entries.filter((entry) => entry.position < record.from);
  return entries;
}

function sameEntry(a: JournalEntry, b: JournalEntry): boolean {
  return a.position === b.position && a.kind === b.kind && a.key === b.key && JSON.stringify(a.value) === JSON.stringify(b.value);
}

function sameEntries(a: JournalEntry[], b: JournalEntry[]): boolean {
  return a.length === b.length && a.every((entry, index) => sameEntry(entry, b[index]!));
}

/** The first position at which the store's copy and Restate's journal differ. */
function firstDifference(stored: JournalEntry[], entries: JournalEntry[]): number {
  const byPosition = new Map(entries.map((entry) => [entry.position, entry]));
  let from = Number.POSITIVE_INFINITY;
  for (const entry of stored) {
    const other = byPosition.get(entry.position);
    if (!other || !sameEntry(entry, other)) from = Math.min(from, entry.position);
  }
  const storedPositions = new Set(stored.map((entry) => entry.position));
  for (const entry of entries) if (!storedPositions.has(entry.position)) from = Math.min(from, entry.position);
  return Number.isFinite(from) ? from : 0;
}
