import type { By, StopReason } from '@stepwise/shared-types';
import { InputTimeoutError } from '../errors.ts';
import { abortReason } from '../util/abort.ts';

interface Waiter {
  questionId: string;
  /** The only answers the question takes (a confirmation's Yes / No), case and whitespace aside. */
  choices?: readonly string[] | undefined;
  /** Checks an answer (an approval's edited arguments): the answer to give the run, or why it is refused (the question stays open). */
  accept?: AnswerCheck | undefined;
  resolve: (answer: string) => void;
}

/** Checks an answer before the run takes it. */
export type AnswerCheck = (answer: string) => { ok: true; answer: string } | { ok: false; outcome: 'invalid_answer' | 'invalid_arguments'; message: string };

/**
 * Where a durable engine keeps answers (Restate: one durable promise per question). An answer
 * recorded there while nobody waited (the run's process was away) is found when the question
 * waits again; the first answer recorded is the one the run takes, wherever it was given.
 */
export interface AnswerLedger {
  /** The answer recorded for the question, if any. */
  peek(questionId: string): Promise<string | undefined>;
  /** Records `answer` unless one is recorded already; resolves with the recorded one. */
  settle(questionId: string, answer: string): Promise<string>;
}

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
  /** Told when a person's answer is taken (the kernel logs who answered, in multi-user modes). */
  onAnswered: ((questionId: string, by: By) => void) | undefined;
  /** Set by a durable engine while it executes the run. */
  answers: AnswerLedger | undefined;
  /** Why the last answer was refused, when a check refused it (read right after provideInput). */
  rejection: string | undefined;

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
    if (this.controller.signal.aborted) throw abortReason(this.controller.signal);
  }

  /** The ids of the questions waiting now, oldest first. */
  get pendingQuestions(): string[] {
    return this.waiters.map((waiter) => waiter.questionId);
  }

  /**
   * Resolves with the answer to question `questionId`. Rejects with InputTimeoutError after
   * `timeoutMs`, or with the abort error as soon as `signal` aborts.
   */
  waitForInput(questionId: string, timeoutMs: number, signal: AbortSignal = this.signal, choices?: readonly string[] | AnswerCheck): Promise<string> {
    const answers = this.answers;
    // The waiter is registered at once, so an answer sent the moment the question shows is taken.
    const local = this.waitHere(questionId, timeoutMs, signal, choices);
    if (!answers) return local;
    // An answer recorded while this run's process was away answers it now.
    void answers.peek(questionId).then(
      (recorded) => {
        if (recorded !== undefined) this.provideInput(recorded, questionId);
      },
      () => undefined,
    );
    return local.then((answer) => answers.settle(questionId, answer));
  }

  private waitHere(questionId: string, timeoutMs: number, signal: AbortSignal, check: readonly string[] | AnswerCheck | undefined): Promise<string> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(abortReason(signal));
      const waiter: Waiter = {
        questionId,
        ...(typeof check === 'function' ? { accept: check } : { choices: check }),
        resolve: (answer) => {
          settle();
          resolve(answer);
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
  provideInput(answer: string, questionId?: string, by?: By): InputOutcome {
    if (this.waiters.length === 0) return 'no_pending_input';
    if (questionId === undefined && this.waiters.length > 1) return 'ambiguous_input';
    const waiter = questionId === undefined ? this.waiters[0] : this.waiters.find((candidate) => candidate.questionId === questionId);
    if (!waiter) return 'unknown_question';
    this.rejection = undefined;
    let taken = answer;
    if (waiter.accept) {
      const checked = waiter.accept(answer);
      if (!checked.ok) {
        this.rejection = checked.message;
        return checked.outcome;
      }
      taken = checked.answer;
    } else if (waiter.choices) {
      // A question with choices takes one of them and nothing else: anything else leaves it open.
      const choice = waiter.choices.find((candidate) => candidate.toLowerCase() === answer.trim().toLowerCase());
      if (choice === undefined) return 'invalid_answer';
      taken = choice;
    }
    // Who answered is logged before the run goes on with the answer.
    if (by) this.onAnswered?.(waiter.questionId, by);
    waiter.resolve(taken);
    return 'answered';
  }
}
