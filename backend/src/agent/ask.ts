import { randomUUID } from 'node:crypto';
import { isAbortError } from '../errors.ts';
import { JOURNAL } from './run-journal.ts';
import type { Run } from './strategy.ts';

/** A question a strategy asks by itself (not through the model's request_input tool). */
export interface PersonQuestion {
  /** Names the question within the run (journal key): the same question gets the same key on a replay. */
  key: string;
  step: number;
  question: string;
  kind: 'question' | 'confirm';
  choices?: string[];
  nodeId?: string;
}

/**
 * Asks the person and waits for the answer, with the run's input timeout. The question (its id and
 * deadline) and the answer are journaled: a replay shows the same question and takes the recorded
 * answer without asking. A run that continues another asks again, under a new journaled key, a
 * question its past left unanswered, and also one answered with `askAgainOn` (a confirmation
 * answered "No" paused the past: going on means asking again).
 */
export async function askPerson(
  run: Pick<Run, 'input' | 'events' | 'sink' | 'control' | 'inputTimeoutMs' | 'effects'>,
  ask: PersonQuestion,
  askAgainOn?: string,
): Promise<string> {
  const { events, sink, control, inputTimeoutMs, effects } = run;
  const round = await roundOf(run, ask.key, askAgainOn);
  const fresh = () => ({ id: `q_${randomUUID()}`, deadline: new Date(Date.now() + inputTimeoutMs).toISOString() });
  const asked = round.asked ?? (await effects.once(JOURNAL.question, round.key, async () => fresh())).value;
  await sink.emit({
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
  });
  if (round.answer !== undefined) return round.answer;
  const { value } = await effects.once<string>(JOURNAL.answer, round.key, async () => {
    try {
      const remaining = Math.max(0, Date.parse(asked.deadline) - Date.now());
      // A confirmation takes only its choices; a question with suggested choices takes any answer.
      return await control.waitForInput(asked.id, remaining, control.signal, ask.kind === 'confirm' ? ask.choices : undefined);
    } catch (error) {
      if (!isAbortError(error, control.signal)) await sink.emit(events.requestInputTimeout(ask.step));
      throw error;
    }
  });
  return value;
}

interface Asked {
  id: string;
  deadline: string;
}

/**
 * Which round of a question to ask or replay (`key`, then `key#2`, `key#3`…): the first one the
 * past did not close. A round is closed when a later round exists, or when this run continues
 * another and the round was left unanswered or answered `askAgainOn`. The past's entries of the
 * rounds it goes through are taken (so they stay in the journal), and the round's own when the
 * past has them.
 */
async function roundOf(run: Pick<Run, 'effects'>, key: string, askAgainOn: string | undefined): Promise<{ key: string; asked?: Asked; answer?: string }> {
  const { effects } = run;
  const recorded = async <T>(kind: string, current: string): Promise<T | undefined> =>
    effects.has(kind, current) ? (await effects.once<T>(kind, current, async () => undefined as T)).value : undefined;
  for (let round = 1; ; round++) {
    const current = round === 1 ? key : `${key}#${round}`;
    if (!effects.has(JOURNAL.question, current)) return { key: current };
    const asked = await recorded<Asked>(JOURNAL.question, current);
    const answer = await recorded<string>(JOURNAL.answer, current);
    const later = effects.has(JOURNAL.question, `${key}#${round + 1}`);
    const closed = later || (effects.continues && (answer === undefined || (askAgainOn !== undefined && answer === askAgainOn)));
    if (!closed) return { key: current, ...(asked ? { asked } : {}), ...(answer === undefined ? {} : { answer }) };
  }
}
