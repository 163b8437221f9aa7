import type { By, PersonAnswer, StopReason } from '@stepwise/shared-types';
import { InputTimeoutError } from '../../errors.ts';
import { abortReason } from '../../util/abort.ts';
import { SteeringInbox } from './steering.ts';

/** What a question makes of an answer: the value the run takes, or why the answer is refused (the question stays open). */
export type AnswerRead<T> = { ok: true; value: T } | { ok: false; outcome: 'invalid_answer' | 'invalid_arguments'; message?: string | undefined };

/** Reads an answer to one question (see AnswerRead). */
export type AnswerReader<T> = (answer: PersonAnswer) => AnswerRead<T>;

/** A question that takes words, any words. */
export const anyText: AnswerReader<string> = (answer) =>
  answer.kind === 'text'
    ? { ok: true, value: answer.text }
    : { ok: false, outcome: 'invalid_answer', message: 'This question takes words, not an approval; it is still waiting' };

/** A question that takes one of its choices and nothing else (case and whitespace aside): the choice, as the question spells it. */
export function oneOf(choices: readonly string[]): AnswerReader<string> {
  return (answer) => {
    const choice = answer.kind === 'text' ? choices.find((candidate) => candidate.toLowerCase() === answer.text.trim().toLowerCase()) : undefined;
    return choice === undefined ? { ok: false, outcome: 'invalid_answer' } : { ok: true, value: choice };
  };
}

/** Words as an answer. */
export function textAnswer(text: string): PersonAnswer {
  return { kind: 'text', text };
}

interface Waiter {
  questionId: string;
  /** What the question makes of an answer. */
  read: AnswerReader<unknown>;
  /** Gives the run the answer, as read. */
  resolve: (answer: PersonAnswer, value: unknown) => void;
}

/**
 * Where a durable engine keeps answers (Restate: one durable promise per question). An answer
 * recorded there while nobody waited (the run's process was away) is found when the question
 * waits again; the first answer recorded is the one the run takes, wherever it was given.
 */
export interface AnswerLedger {
  /** The answer recorded for the question, if any. */
  peek(questionId: string): Promise<PersonAnswer | undefined>;
  /** Records `answer` unless one is recorded already; resolves with the recorded one. */
  settle(questionId: string, answer: PersonAnswer): Promise<PersonAnswer>;
}

interface Branch {
  controller: AbortController;
  stopped: boolean;
  stoppedBy: By | undefined;
}

/** A branch's controls (see AgentControl.branch). */
export type BranchControl = AgentControl & {
  /** True when a person stopped this branch alone. */
  readonly stopped: boolean;
  readonly stoppedBy: By | undefined;
  end(): void;
};

/** What became of an answer: given to its question, or why not. */
export type InputOutcome = 'answered' | 'no_pending_input' | 'unknown_question' | 'ambiguous_input' | 'invalid_answer' | 'invalid_arguments';

/**
 * The controls of one active run: a stop signal that every model call, tool and wait receives,
 * and the questions waiting for the user, each under its own id, so that answers to several
 * questions pending at once (parallel tool calls that each ask) never swap.
 */
export class AgentControl {
  private readonly controller = new AbortController();
  private readonly waiters: Waiter[] = [];
  private reason: StopReason | undefined;
  private stopper: By | undefined;
  private handingOver = false;
  private parking: string[] | undefined;
  /** Told when a person's answer is taken (the kernel logs who answered, in multi-user modes). */
  onAnswered: ((questionId: string, by: By) => void) | undefined;
  /** Set by a durable engine while it executes the run. */
  answers: AnswerLedger | undefined;
  /** Why the last answer was refused, when its question said why (read right after provideInput). */
  rejection: string | undefined;
  /** The messages people sent to the run that it has not read yet. */
  readonly steering = new SteeringInbox();

  /** Aborts when the run is stopped. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the run was stopped, once it was. */
  get stopReason(): StopReason | undefined {
    return this.reason;
  }

  /** Who stopped the run, when a person did in a multi-user mode. */
  get stoppedBy(): By | undefined {
    return this.stopper;
  }

  /** True while the run waits for the user's answer. */
  get awaitingInput(): boolean {
    return this.waiters.length > 0;
  }

  /** True when the run was stopped to be handed to another instance: it logs no ending, another goes on with it. */
  get handedOver(): boolean {
    return this.handingOver;
  }

  /**
   * The questions the run was parked on (the one whose deadline passed first), once it was: the run
   * stopped here unended, and an answer to one of them resumes it from its journal.
   */
  get parkedOn(): string[] | undefined {
    return this.parking;
  }

  /**
   * Parks the run: nobody answered question `questionId` in time, so it stops here without ending,
   * and waits, holding nothing, for an answer to it (or to another question still open).
   */
  park(questionId: string): void {
    if (this.controller.signal.aborted) return;
    this.parking = [questionId, ...this.pendingQuestions.filter((id) => id !== questionId)];
    this.stop('input_timeout');
  }

  /** Stops the run here without ending it (several instances: another instance goes on from its journal). */
  handOver(): void {
    if (this.controller.signal.aborted) return;
    this.handingOver = true;
    this.stop('shutdown');
  }

  /** Stops the run: aborts in-flight model calls, tools and waits at once. Later calls change nothing. */
  stop(reason: StopReason = 'user', by?: By): void {
    if (this.controller.signal.aborted) return;
    this.reason = reason;
    this.stopper = by;
    const error = new Error(`Run stopped (${reason})`);
    error.name = 'AbortError';
    this.controller.abort(error);
  }

  /** Throws the abort error if the run was stopped; loops call it between phases. */
  throwIfStopped(): void {
    if (this.signal.aborted) throw abortReason(this.signal);
  }

  /** The run's own controls (a branch's controls answer with their run's). */
  get run(): AgentControl {
    return this;
  }

  private readonly branches = new Map<string, Branch>();

  /**
   * The controls of one branch of the run (a research task, a plan step): the run's, but with a
   * signal that also aborts when a person stops this branch alone (`stopBranch`). `end` once the
   * branch is over; `stopped` says whether a person stopped it.
   */
  branch(nodeId: string): BranchControl {
    const root = this.run;
    const controller = new AbortController();
    const onAbort = () => controller.abort(root.signal.reason);
    if (root.signal.aborted) onAbort();
    else root.signal.addEventListener('abort', onAbort, { once: true });
    const branch: Branch = { controller, stoppedBy: undefined, stopped: false };
    root.branches.set(nodeId, branch);
    const control = Object.create(root) as BranchControl;
    Object.defineProperties(control, {
      run: { get: () => root },
      signal: { get: () => controller.signal },
      stopped: { get: () => branch.stopped },
      stoppedBy: { get: () => branch.stoppedBy },
      end: {
        value: () => {
          root.signal.removeEventListener('abort', onAbort);
          if (root.branches.get(nodeId) === branch) root.branches.delete(nodeId);
        },
      },
    });
    return control;
  }

  /** Stops one branch while the rest of the run goes on; false when no such branch is going. */
  stopBranch(nodeId: string, by?: By): boolean {
    const branch = this.run.branches.get(nodeId);
    if (!branch || branch.controller.signal.aborted) return false;
    branch.stopped = true;
    branch.stoppedBy = by;
    const error = new Error(`Branch ${nodeId} stopped`);
    error.name = 'AbortError';
    branch.controller.abort(error);
    return true;
  }

  /** Branches a person stopped and asked to run again, not yet taken up by the run. */
  private readonly resumeAsked = new Set<string>();
  /** Branches stopped alone that may run again while the run goes on. */
  private readonly resumable = new Set<string>();

  /** A stopped branch that may run again (`resumeBranch`) until `settleBranch`. */
  stoppedBranch(nodeId: string): void {
    this.run.resumable.add(nodeId);
  }

  /** A person asks to run a stopped branch again; false when it is not one that may. */
  resumeBranch(nodeId: string): boolean {
    if (!this.run.resumable.has(nodeId)) return false;
    this.run.resumeAsked.add(nodeId);
    return true;
  }

  /** The stopped branches asked to run again since the last call (they may no longer be resumed after). */
  takeResumed(): string[] {
    const asked = [...this.run.resumeAsked];
    this.run.resumeAsked.clear();
    for (const nodeId of asked) this.run.resumable.delete(nodeId);
    return asked;
  }

  /** A stopped branch may no longer run again (its part of the run is over). */
  settleBranch(nodeId: string): void {
    this.run.resumable.delete(nodeId);
    this.run.resumeAsked.delete(nodeId);
  }

  /** The ids of the questions waiting now, oldest first. */
  get pendingQuestions(): string[] {
    return this.waiters.map((waiter) => waiter.questionId);
  }

  /**
   * Resolves with what `read` makes of the answer to question `questionId` (by default: its words).
   * Rejects with InputTimeoutError after `timeoutMs`, or with the abort error as soon as `signal` aborts.
   */
  waitForInput(questionId: string, timeoutMs: number, signal?: AbortSignal): Promise<string>;
  waitForInput<T>(questionId: string, timeoutMs: number, signal: AbortSignal, read: AnswerReader<T>): Promise<T>;
  async waitForInput<T>(questionId: string, timeoutMs: number, signal: AbortSignal = this.signal, read?: AnswerReader<T>): Promise<T> {
    const reader = (read ?? anyText) as AnswerReader<T>;
    const answers = this.answers;
    // The waiter is registered at once, so an answer sent the moment the question shows is taken.
    const local = this.waitHere(questionId, timeoutMs, signal, reader);
    if (!answers) return (await local).value;
    // An answer recorded while this run's process was away answers it now.
    void answers.peek(questionId).then(
      (recorded) => {
        if (recorded !== undefined) this.provideInput(recorded, questionId);
      },
      () => undefined,
    );
    const taken = await local;
    // The first answer recorded stands (given on another instance, say): the run takes that one.
    const recorded = reader(await answers.settle(questionId, taken.answer));
    return recorded.ok ? recorded.value : taken.value;
  }

  private waitHere<T>(questionId: string, timeoutMs: number, signal: AbortSignal, read: AnswerReader<T>): Promise<{ answer: PersonAnswer; value: T }> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(abortReason(signal));
      const waiter: Waiter = {
        questionId,
        read,
        resolve: (answer, value) => {
          settle();
          resolve({ answer, value: value as T });
        },
      };
      const onAbort = () => {
        settle();
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        settle();
        reject(new InputTimeoutError(timeoutMs));
      }, timeoutMs);
      const settle = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * Hands the user's answer to the question it names; without a `questionId`, to the only question
   * waiting (with several waiting, that is ambiguous and nothing is answered).
   */
  provideInput(answer: PersonAnswer, questionId?: string, by?: By): InputOutcome {
    if (this.waiters.length === 0) return 'no_pending_input';
    if (questionId === undefined && this.waiters.length > 1) return 'ambiguous_input';
    const waiter = questionId === undefined ? this.waiters[0] : this.waiters.find((candidate) => candidate.questionId === questionId);
    if (!waiter) return 'unknown_question';
    this.rejection = undefined;
    const read = waiter.read(answer);
    if (!read.ok) {
      this.rejection = read.message;
      return read.outcome;
    }
    // Who answered is logged before the run goes on with the answer.
    if (by) this.onAnswered?.(waiter.questionId, by);
    waiter.resolve(answer, read.value);
    return 'answered';
  }
}
