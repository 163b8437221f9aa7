import type { StopReason, StoppedCall } from '@stepwise/shared-types';
import { CostBudgetReached, InputTimeoutError, isAbortError, StepwiseError, toClientError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { LlmMessage, TokenUsage } from '../../messages.ts';
import type { AgentControl } from './agent-control.ts';
import type { EventSink } from './event-sink.ts';
import type { RunEvents, RunTotals } from './run-events.ts';
import type { RunSpending } from './run-spending.ts';
import type { RunProgress, RunSuccess } from './strategy.ts';

/** How a run ended, for the session's history and records. */
export type RunOutcome = (
  | { status: 'completed'; answer: string }
  | { status: 'stopped'; reason: StopReason }
  | { status: 'failed'; message: string }
  | { status: 'parked'; parked: ParkedRun }
) & {
  steps: number;
  transcript: LlmMessage[];
  usage: TokenUsage;
  costUsd?: number | null;
};

/**
 * A run parked on its questions (see AgentControl.park): what it needs to be resumed by an answer,
 * or ended by a stop without going on (its step, its stop receipt, its transcript and spending).
 */
export interface ParkedRun {
  /** The open questions, the one whose deadline passed first. */
  questions: string[];
  step: number;
  stoppedCalls?: StoppedCall[] | undefined;
  transcript: LlmMessage[];
  usage: TokenUsage;
  costUsd: number | null;
  totals: RunTotals;
}

/**
 * Every way a run ends, each written once (see writeEnding):
 * - `completed`: its strategy finished, grounded in what the tools returned (answered, unresolved,
 *   at its step limit, …: the completion's reason);
 * - `budget`: its cost budget stopped it before its next model call (it may be continued with a larger one);
 * - `stopped`: a person, the clock, the token budget, an unanswered question, a shutdown;
 * - `failed`: an error;
 * - `handed_over`: stopped here unended, for another instance (or a later attempt) to go on with;
 * - `parked`: stopped here unended, waiting (holding nothing) for an answer to one of its questions.
 */
export type Ending =
  | { kind: 'completed'; success: RunSuccess }
  | { kind: 'budget'; budgetUsd: number; spentUsd: number }
  | { kind: 'stopped'; reason: StopReason }
  | { kind: 'failed'; error: unknown }
  | { kind: 'handed_over' }
  | { kind: 'parked'; questions: string[] };

/** What writing a run's ending needs of the run. */
export interface EndingScope {
  control: AgentControl;
  sink: EventSink;
  events: RunEvents;
  logger: Logger;
  /** Plain chat's wire: no run events, its stops said as errors. */
  chatWire: boolean;
  /** The run's wall clock budget (for plain chat's message). */
  timeoutMs: number;
  progress: RunProgress;
  spending: RunSpending;
  usage: TokenUsage;
  /** The run's transcript beyond what the session's history holds already. */
  added(): LlmMessage[];
  /** Resolves once everything the run journaled is committed. */
  settled(): Promise<void>;
}

/** The ending an error thrown out of a run means. */
export function endingOf(error: unknown, scope: Pick<EndingScope, 'control' | 'chatWire'>): Ending {
  const { control } = scope;
  if (control.handedOver && isAbortError(error, control.signal)) return { kind: 'handed_over' };
  if (control.parkedOn && isAbortError(error, control.signal)) return { kind: 'parked', questions: control.parkedOn };
  // Not a failure: the run did what its budget allowed (plain chat has no budget ending: it fails).
  if (error instanceof CostBudgetReached && !scope.chatWire) return { kind: 'budget', budgetUsd: error.budgetUsd, spentUsd: error.spentUsd };
  if (error instanceof InputTimeoutError) return { kind: 'stopped', reason: 'input_timeout' };
  if (isAbortError(error, control.signal)) return { kind: 'stopped', reason: control.stopReason ?? 'user' };
  return { kind: 'failed', error };
}

/**
 * Logs a run's one ending and says what it was: the one place every ending is written, switched
 * exhaustively. An ending whose events cannot be logged ends as failed, said once more (and, if
 * that cannot be logged either, recorded as such).
 */
export async function writeEnding(ending: Ending, scope: EndingScope): Promise<RunOutcome> {
  const { sink, events, chatWire, progress, spending, usage } = scope;
  const ended = (
    end: { status: 'completed'; answer: string } | { status: 'stopped'; reason: StopReason } | { status: 'failed'; message: string },
    transcript = scope.added(),
  ): RunOutcome => ({
    ...end,
    steps: progress.step,
    transcript,
    usage,
    costUsd: spending.totals().cost_usd,
  });
  try {
    switch (ending.kind) {
      case 'completed': {
        const { success } = ending;
        await sink.emit(events.assistantMessage(success.answer));
        if (!chatWire) await sink.emit(events.completion(success.steps, success.reason, spending.totals(), success.summary));
        // Everything the run recorded is committed before its outcome is saved.
        await scope.settled();
        await sink.flush();
        return {
          ...ended({ status: 'completed', answer: success.answer }, [...scope.added(), { role: 'assistant', content: success.answer }]),
          steps: success.steps,
        };
      }
      case 'budget': {
        const answer = `I stopped before my next model call: it would pass this run's cost budget of $${ending.budgetUsd} (spent so far: $${ending.spentUsd}). Continue the run with a larger budget to go on.`;
        await sink.emit(events.assistantMessage(answer));
        await sink.emit(events.completion(progress.step, 'budget', spending.totals()));
        await sink.flush();
        return ended({ status: 'completed', answer }, [...scope.added(), { role: 'assistant', content: answer }]);
      }
      case 'stopped':
        await writeStop(ending.reason, scope);
        return ended({ status: 'stopped', reason: ending.reason });
      case 'failed': {
        const { code, message } = toClientError(ending.error);
        scope.logger[ending.error instanceof StepwiseError ? 'warn' : 'error']({ err: ending.error, step: progress.step }, 'run failed');
        await sink.emit(chatWire ? events.failed(code, message) : events.error(progress.step, message, spending.totals()));
        await sink.flush();
        return ended({ status: 'failed', message });
      }
      case 'handed_over':
        // Nothing ends here: the run's record stays running for the instance that goes on with it, with all it wrote.
        await Promise.allSettled([scope.settled(), sink.flush()]);
        scope.logger.info({ step: progress.step }, 'run handed over to another instance');
        return { status: 'stopped', reason: 'shutdown', steps: progress.step, transcript: scope.added(), usage };
      case 'parked': {
        // Nothing ends: the run waits, its journal committed, for an answer that resumes it from there.
        await scope.settled();
        await sink.flush();
        scope.logger.info({ step: progress.step, questions: ending.questions }, 'run parked: it waits for an answer');
        const transcript = scope.added();
        const costUsd = spending.totals().cost_usd ?? null;
        const parked: ParkedRun = {
          questions: ending.questions,
          step: progress.step,
          ...(progress.stoppedCalls?.length ? { stoppedCalls: progress.stoppedCalls } : {}),
          transcript,
          usage,
          costUsd,
          totals: spending.totals(),
        };
        return { status: 'parked', parked, steps: progress.step, transcript, usage, costUsd };
      }
      default: {
        const unknown: never = ending;
        throw new Error(`Unknown ending ${JSON.stringify(unknown)}`);
      }
    }
  } catch (error) {
    if (ending.kind === 'completed' || ending.kind === 'budget' || ending.kind === 'parked') return writeEnding(endingOf(error, scope), scope);
    scope.logger.error({ err: error }, 'could not log the end of the run');
    return ended({ status: 'failed', message: 'The run could not be recorded' });
  }
}

/** A stop as its run's wire says it: agent_stopped (with who stopped it and the stop receipt), or plain chat's error for a limit. */
async function writeStop(reason: StopReason, scope: EndingScope): Promise<void> {
  const { sink, events, control, progress, spending } = scope;
  if (!scope.chatWire) {
    await sink.emit(events.stopped(reason, progress.step, spending.totals(), progress.stoppedCalls, reason === 'user' ? control.stoppedBy : undefined));
  } else if (reason === 'timeout') {
    await sink.emit(events.failed('timeout', `The answer took longer than ${Math.round(scope.timeoutMs / 1000)} s (CHAT_TIMEOUT_MS) and was stopped`));
  } else if (reason === 'token_budget') {
    await sink.emit(events.failed('timeout', 'The answer used more tokens than a run may (AGENT_RUN_TOKEN_BUDGET) and was stopped'));
  }
  await sink.flush();
}
