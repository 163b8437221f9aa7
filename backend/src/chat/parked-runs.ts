import type { AgentRequestInput, By, ErrorEvent, PersonAnswer } from '@stepwise/shared-types';
import { anyText, oneOf } from '../agent/kernel/agent-control.ts';
import type { KeptAnswer } from '../agent/kernel/ask.ts';
import type { ParkedRun } from '../agent/kernel/run-ending.ts';
import { runEvents } from '../agent/kernel/run-events.ts';
import { JOURNAL } from '../agent/kernel/run-journal.ts';
import type { Admission } from '../hosting/run-admission.ts';
import type { Logger } from '../logger.ts';
import type { RunRecord, Store } from '../store/store.ts';
import { readApproval } from '../tools/approval.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { saveRunEnd, sessionEvents } from './run-endings.ts';
import type { SessionEventLog } from './session-event-log.ts';
import type { RunStart, SessionRuns } from './session-runs.ts';

/**
 * Parked runs (INPUT_TIMEOUT_ACTION / APPROVAL_TIMEOUT_ACTION `park`): a run whose question passed
 * its deadline stops where it stands without ending, and holds nothing (no run slot, no lease, no
 * process). Its record says `parked`, with what it waits on; startup recovery leaves it be. An
 * answer to one of its questions, given later on any instance, is kept in its journal and the run
 * recovered from there: its question finds the kept answer. A stop ends it without going on.
 */

/** A chat's parked run, when its last run is parked: the run and what it waits on. */
export async function parkedRunOf(store: Store, sessionId: string): Promise<{ run: RunRecord; parked: ParkedRun } | undefined> {
  const run = await store.lastRun(sessionId);
  if (run?.status !== 'parked' || !run.checkpoint) return undefined;
  return { run, parked: run.checkpoint as ParkedRun };
}

/** What a chat with a parked run says to a message that would start another. */
export const RUN_PARKED: ErrorEvent = {
  type: 'error',
  code: 'run_active',
  message: 'This chat’s run is waiting for your answer: answer its question to go on, or stop the run',
};

/** Question `questionId` as run `run` asked it (its log holds the question); undefined when it did not. */
export async function askedIn(store: Store, run: RunRecord, questionId: string): Promise<AgentRequestInput | undefined> {
  for await (const event of sessionEvents(store, run.sessionId, run.afterSeq ?? 0)) {
    if (event.run_id === run.id && event.type === 'agent_update' && event.update_type === 'agent_request_input' && event.question_id === questionId)
      return event;
  }
  return undefined;
}

/**
 * Why an answer does not fit its question as the log shows it (an approval takes Approve or Deny, a
 * confirmation one of its choices, a question words), or undefined when it fits: a parked run is
 * resumed only for an answer its question will take.
 */
export function misfit(question: AgentRequestInput, answer: PersonAnswer): ErrorEvent | undefined {
  const refuse = (message: string): ErrorEvent => ({ type: 'error', code: 'invalid_answer', message });
  if (question.kind === 'approval')
    return readApproval(answer) ? undefined : refuse('An approval takes Approve or Deny (or an "approval" object); it is still waiting');
  const read = question.kind === 'confirm' && question.choices ? oneOf(question.choices)(answer) : anyText(answer);
  if (read.ok) return undefined;
  return refuse(read.message ?? `This question takes only one of its choices (${(question.choices ?? []).join(', ')}); it is still waiting`);
}

/** Keeps an answer to a parked run's question at the end of its journal, where the question finds it once the run goes on. */
export async function keepParkedAnswer(store: Store, runId: string, questionId: string, answer: PersonAnswer, by: By | undefined): Promise<void> {
  const entries = await store.readJournal(runId);
  const kept: KeptAnswer = { answer, ...(by ? { by } : {}), at: new Date().toISOString() };
  const position = Math.max(0, ...entries.map((entry) => entry.position)) + 1;
  await store.appendJournal(runId, { position, kind: JOURNAL.keptAnswer, key: questionId, value: kept });
}

/**
 * Ends a parked run that a person stopped: its transcript joins the history, and it ends as stopped
 * where it stood, with its stop receipt and its spending, then response_complete.
 */
export async function endParked(
  deps: { store: Store; logger: Logger },
  log: SessionEventLog,
  run: RunRecord,
  parked: ParkedRun,
  by: By | undefined,
): Promise<void> {
  const { store, logger } = deps;
  try {
    await store.appendMessages(run.sessionId, parked.transcript, log.lastSeq);
  } catch (error) {
    logger.error({ err: error, run_id: run.id }, 'could not save the messages of the run');
  }
  const events = runEvents(run.id);
  await log.record(events.stopped('user', parked.step, parked.totals, parked.stoppedCalls, by));
  const { usage } = parked;
  await saveRunEnd(
    store,
    run.id,
    {
      status: 'stopped',
      endReason: 'user',
      steps: parked.step,
      usage,
      spending: { cachedTokens: usage.cachedTokens ?? 0, reasoningTokens: usage.reasoningTokens ?? 0, costUsd: parked.costUsd },
    },
    logger,
  );
  await log.record(events.responseComplete());
}

/** What ParkedRuns needs of its chat: to hold it while a parked run is taken back, and to begin the run again. */
export interface ParkedRunsChat {
  /** Resolves once a run of the chat that is parking here has let go of everything. */
  parking(): Promise<void>;
  /** Holds the chat (nothing else may start) once what ended in it has settled; false while something goes on in it. */
  enter(): Promise<boolean>;
  leave(): void;
  /** Runs an admitted run as the chat's active one; the error when something else became the chat's meanwhile. */
  begin(runId: string, admission: Admitted, start: RunStart): ErrorEvent | undefined;
}

type Admitted = Admission & { kind: 'admitted' };

/** How many times a parked run's lease is asked for (see ParkedRuns.admit). */
const LEASE_TRIES = 8;

/** One chat's parked run: what refuses a new run meanwhile, and what an answer or a stop does to it. */
export class ParkedRuns {
  constructor(
    private readonly sessionId: string,
    private readonly log: SessionEventLog,
    private readonly deps: Pick<ChatDependencies, 'store' | 'logger' | 'admission'>,
    private readonly runs: SessionRuns,
    private readonly chat: ParkedRunsChat,
  ) {}

  /** RUN_PARKED while the chat's run is parked (no other run starts), else undefined. */
  async refusal(): Promise<ErrorEvent | undefined> {
    return (await parkedRunOf(this.deps.store, this.sessionId)) ? RUN_PARKED : undefined;
  }

  /**
   * An answer to question `questionId` (or, left out, the only one) of the chat's parked run: kept
   * in the run's journal, and the run recovered from there, where its question takes it. The
   * error for an answer the question would not take; 'not_parked' when no parked run here waits on it.
   */
  async answer(questionId: string | undefined, answer: PersonAnswer, by: By | undefined): Promise<ErrorEvent | undefined | 'not_parked'> {
    const { store } = this.deps;
    await this.chat.parking();
    const found = await parkedRunOf(store, this.sessionId);
    const id = questionId ?? (found?.parked.questions.length === 1 ? found.parked.questions[0] : undefined);
    if (!found || id === undefined || !found.parked.questions.includes(id)) return 'not_parked';
    const question = await askedIn(store, found.run, id);
    const refused = question ? misfit(question, answer) : undefined;
    if (refused) return refused;
    const resumed = await this.take(found.run.id, async (run, _parked, admission) => {
      await keepParkedAnswer(store, run.id, id, answer, by);
      const recovery = await this.runs.recoverInput(run, { answered: true });
      if (recovery && !this.chat.begin(run.id, admission, { kind: 'recovery', ...recovery })) return;
      await admission.release();
      await this.runs.closeInterrupted(run);
    });
    return resumed ? undefined : 'not_parked';
  }

  /** Stops the chat's parked run where it stands (see endParked); false when none is parked. */
  async stop(by: By | undefined): Promise<boolean> {
    await this.chat.parking();
    return this.take(undefined, async (run, parked, admission) => {
      await endParked(this.deps, this.log, run, parked, by).finally(() => admission.release());
    });
  }

  /**
   * Admits the parked run here. Parked a moment ago on another instance, it may still hold its lease
   * there while it winds down: tried again a few times, for a few seconds in all.
   */
  private async admit(runId: string): Promise<Admission> {
    for (let attempt = 1; ; attempt++) {
      const admission = await this.deps.admission.admit({ sessionId: this.sessionId, runId, log: this.log, kind: 'recovering' });
      if (admission.kind === 'admitted' || attempt >= LEASE_TRIES) return admission;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }

  /**
   * Takes the chat's parked run (`runId`, or whichever) back for `work`, a resume or a stop: its
   * lease here, its record running again. False when there is none, or another answer or stop (on
   * any instance) took it first.
   */
  private async take(runId: string | undefined, work: (run: RunRecord, parked: ParkedRun, admission: Admitted) => Promise<void>): Promise<boolean> {
    const found = await parkedRunOf(this.deps.store, this.sessionId);
    if (!found || (runId !== undefined && found.run.id !== runId) || !(await this.chat.enter())) return false;
    const { run } = found;
    try {
      const admission = await this.admit(run.id);
      if (admission.kind === 'refused') return false;
      const unparked = await this.deps.store.unparkRun(run.id);
      if (!unparked) {
        await admission.release();
        return false;
      }
      await work({ ...run, status: 'running' }, unparked.checkpoint as ParkedRun, admission);
      return true;
    } finally {
      this.chat.leave();
    }
  }
}
