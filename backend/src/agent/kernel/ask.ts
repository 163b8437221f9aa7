import { randomUUID } from 'node:crypto';
import type { By, LoggedEventBody, PersonAnswer } from '@stepwise/shared-types';
import { InputTimeoutError } from '../../errors.ts';
import { abortReason } from '../../util/abort.ts';
import { type AnswerReader, anyText, oneOf } from './agent-control.ts';
import type { RunEvents } from './run-events.ts';
import { JOURNAL } from './run-journal.ts';
import type { Run } from './strategy.ts';

/** A question as it was asked: its id (answers name it) and its deadline. */
export interface Asked {
  id: string;
  deadline: string;
}

/**
 * How a question its past asked is asked by a run that goes on from that past:
 * - `numbered`: rounds `key`, `key#2`, `key#3`…; a continued run asks a round again that its past
 *   left unanswered or answered `askAgainOn` (a confirmation answered "No" paused the past).
 * - `again`: a continued run asks again, once, under `key#again`, a question its past left
 *   unanswered (it timed out, or the run was stopped while it waited); the answer keeps `key`.
 */
export type Rounds = { kind: 'numbered'; askAgainOn?: string | undefined } | { kind: 'again' };

/** What a question's answer is journaled as (and read back from, on a replay). */
export interface AnswerRecord<T> {
  write(value: T, durationMs: number): unknown;
  read(recorded: unknown): { value: T; durationMs?: number | undefined };
}

/**
 * What a timeout does: the run fails with it (input_timeout), the run is stopped, the question takes
 * an answer of its own, or the run is parked (it stops here unended; an answer given later is kept
 * in its journal and resumes it, and the question takes that answer).
 */
export type OnTimeout<T> = { kind: 'fail' } | { kind: 'stop' } | { kind: 'answer'; value: T } | { kind: 'park' };

/** An answer to a question of a parked run, as its journal keeps it (JOURNAL.keptAnswer, keyed by the question's id). */
export interface KeptAnswer {
  answer: PersonAnswer;
  /** Who answered (multi-user modes). */
  by?: By | undefined;
  /** When (ISO-8601). */
  at: string;
}

/** What a journaled question nobody answered in time does, by INPUT_TIMEOUT_ACTION: the run is parked, or it fails (input_timeout). */
export function inputTimeout(run: Pick<Run, 'inputTimeoutAction'>): OnTimeout<never> {
  return run.inputTimeoutAction === 'park' ? { kind: 'park' } : { kind: 'fail' };
}

/** One question to a person, typed by its answer. */
export interface Question<T> {
  /** Names the question within the run (its journal key: the same question gets the same key on a replay); undefined: not journaled. */
  key: string | undefined;
  rounds?: Rounds | undefined;
  step: number;
  /** The event that shows the question, once it has its id and deadline. */
  show: (asked: Asked) => LoggedEventBody;
  /** What the question makes of an answer (or why it refuses one: the question stays open). */
  read: AnswerReader<T>;
  onTimeout: OnTimeout<T>;
  /** The journaled form of the answer (default: the value itself). */
  record?: AnswerRecord<T> | undefined;
  /** Aborts the wait besides the run's stop (a tool call that ended). */
  signal?: AbortSignal | undefined;
}

/** An answer as the run takes it: its value, whether it was read back from the journal, how long the person took. */
export interface Answered<T> {
  value: T;
  replayed: boolean;
  durationMs?: number | undefined;
}

/** The part of a run a question uses; `events` may be a branch's. */
export type AskingRun = Pick<Run, 'sink' | 'control' | 'inputTimeoutMs' | 'effects'> & { events: RunEvents };

/**
 * Asks a person and waits for the answer: the one place that makes a question's id and deadline,
 * journals the question and its answer (a replay shows the same question and takes the recorded
 * answer without asking), waits with the run's input timeout, and decides what a timeout does.
 */
export async function askPerson<T>(run: AskingRun, question: Question<T>): Promise<Answered<T>> {
  const { sink, control, effects } = run;
  const record = question.record ?? (itself as AnswerRecord<T>);
  const fresh = (): Asked => ({ id: `q_${randomUUID()}`, deadline: new Date(Date.now() + run.inputTimeoutMs).toISOString() });
  const place = question.key === undefined ? undefined : await placeOf(run, question.key, question.rounds ?? { kind: 'numbered' }, fresh);
  const asked = place ? (place.asked ?? (await effects.once(JOURNAL.question, place.questionKey, async () => fresh())).value) : fresh();
  await sink.emit(question.show(asked));
  if (place?.answer !== undefined) return { ...record.read(place.answer), replayed: true };
  // An answer given while the run was parked: the question takes it now, when it reads it.
  const kept =
    place && effects.has(JOURNAL.keptAnswer, asked.id)
      ? (await effects.once<KeptAnswer>(JOURNAL.keptAnswer, asked.id, async () => undefined as never)).value
      : undefined;
  const wait = async (): Promise<unknown> => {
    const started = performance.now();
    const signal = question.signal ? AbortSignal.any([control.signal, question.signal]) : control.signal;
    const read = kept && question.read(kept.answer);
    if (kept && read?.ok) {
      if (kept.by) control.onAnswered?.(asked.id, kept.by);
      const askedAt = Date.parse(asked.deadline) - run.inputTimeoutMs;
      return record.write(read.value, Math.max(0, Date.parse(kept.at) - askedAt));
    }
    try {
      const remaining = Math.max(0, Date.parse(asked.deadline) - Date.now());
      const value = await control.waitForInput(asked.id, remaining, signal, question.read);
      return record.write(value, Math.round(performance.now() - started));
    } catch (error) {
      if (!(error instanceof InputTimeoutError)) throw error;
      if (question.onTimeout.kind === 'park') {
        await sink.emit(run.events.parked(question.step, asked.id));
        control.park(asked.id);
        throw abortReason(control.signal);
      }
      await sink.emit(run.events.requestInputTimeout(question.step));
      return timedOut(question.onTimeout, run, error, (value) => record.write(value, Math.round(performance.now() - started)));
    }
  };
  if (!place) return { ...record.read(await wait()), replayed: false };
  const answered = await effects.once(JOURNAL.answer, place.answerKey, wait);
  return { ...record.read(answered.value), replayed: answered.replayed };
}

/** What a question nobody answered in time does (see OnTimeout). */
function timedOut<T>(onTimeout: OnTimeout<T>, run: AskingRun, error: InputTimeoutError, write: (value: T) => unknown): unknown {
  switch (onTimeout.kind) {
    case 'fail':
      throw error;
    case 'stop':
      run.control.stop('input_timeout');
      throw error;
    case 'answer':
      return write(onTimeout.value);
    case 'park':
      throw new Error('A parked question is handled where it waits');
    default: {
      const unknown: never = onTimeout;
      throw new Error(`Unknown timeout action ${JSON.stringify(unknown)}`);
    }
  }
}

const itself: AnswerRecord<unknown> = { write: (value) => value, read: (recorded) => ({ value: recorded }) };

/** A strategy's own question: words, or (a confirmation) one of its choices. A timeout parks the run, or ends it (input_timeout), by INPUT_TIMEOUT_ACTION. */
export interface PersonQuestion {
  key: string;
  step: number;
  question: string;
  kind: 'question' | 'confirm';
  choices?: string[];
  nodeId?: string;
}

/**
 * Asks a strategy's own question (not the model's request_input) and resolves with the answer: a
 * confirmation takes only its choices, a question with suggested choices any words. A run that
 * continues another asks again a question its past left unanswered, and also one answered
 * `askAgainOn` (a confirmation answered "No" paused the past: going on means asking again).
 */
export async function askQuestion(
  run: Pick<Run, 'input' | 'events' | 'sink' | 'control' | 'inputTimeoutMs' | 'inputTimeoutAction' | 'effects'>,
  ask: PersonQuestion,
  askAgainOn?: string,
): Promise<string> {
  const answered = await askPerson(run, {
    key: ask.key,
    rounds: { kind: 'numbered', askAgainOn },
    step: ask.step,
    show: (asked) => ({
      type: 'agent_update',
      update_type: 'agent_request_input',
      run_id: run.input.runId,
      ...(ask.nodeId ? { node_id: ask.nodeId } : {}),
      question: ask.question,
      step: ask.step,
      question_id: asked.id,
      kind: ask.kind,
      ...(ask.choices ? { choices: ask.choices } : {}),
      deadline: asked.deadline,
    }),
    read: ask.kind === 'confirm' && ask.choices ? oneOf(ask.choices) : anyText,
    onTimeout: inputTimeout(run),
  });
  return answered.value;
}

/** Where a question's round is journaled, and what its past recorded of it. */
interface Place {
  questionKey: string;
  answerKey: string;
  asked?: Asked | undefined;
  answer?: unknown;
}

async function placeOf(run: Pick<AskingRun, 'effects'>, key: string, rounds: Rounds, fresh: () => Asked): Promise<Place> {
  switch (rounds.kind) {
    case 'numbered':
      return roundOf(run, key, rounds.askAgainOn);
    case 'again':
      return againOf(run, key, fresh);
    default: {
      const unknown: never = rounds;
      throw new Error(`Unknown rounds ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * `again` (see Rounds): the question keeps its id and deadline after a restart of the same run;
 * a continued run that finds it unanswered asks again under `key#again`. The past's question entry
 * is taken either way, so it stays in the journal.
 */
async function againOf(run: Pick<AskingRun, 'effects'>, key: string, fresh: () => Asked): Promise<Place> {
  const { effects } = run;
  const asked = (await effects.once(JOURNAL.question, key, async () => fresh())).value;
  const again = `${key}#again`;
  const asksAgain = effects.has(JOURNAL.question, again) || (effects.continues && !effects.has(JOURNAL.answer, key));
  if (asksAgain) return { questionKey: again, answerKey: key };
  return { questionKey: key, answerKey: key, asked };
}

/**
 * `numbered` (see Rounds): which round of a question to ask or replay (`key`, then `key#2`,
 * `key#3`…): the first one the past did not close. A round is closed when a later round exists, or
 * when this run continues another and the round was left unanswered or answered `askAgainOn`. The
 * past's entries of the rounds it goes through are taken (so they stay in the journal), and the
 * round's own when the past has them.
 */
async function roundOf(run: Pick<AskingRun, 'effects'>, key: string, askAgainOn: string | undefined): Promise<Place> {
  const { effects } = run;
  const recorded = async <T>(kind: string, current: string): Promise<T | undefined> =>
    effects.has(kind, current) ? (await effects.once<T>(kind, current, async () => undefined as T)).value : undefined;
  for (let round = 1; ; round++) {
    const current = round === 1 ? key : `${key}#${round}`;
    if (!effects.has(JOURNAL.question, current)) return { questionKey: current, answerKey: current };
    const asked = await recorded<Asked>(JOURNAL.question, current);
    const answer = await recorded<string>(JOURNAL.answer, current);
    const later = effects.has(JOURNAL.question, `${key}#${round + 1}`);
    const closed = later || (effects.continues && (answer === undefined || (askAgainOn !== undefined && answer === askAgainOn)));
    if (!closed) return { questionKey: current, answerKey: current, ...(asked ? { asked } : {}), ...(answer === undefined ? {} : { answer }) };
  }
}
