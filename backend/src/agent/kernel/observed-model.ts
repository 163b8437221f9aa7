import { ModelError } from '../../errors.ts';
import type { CompletionRequest, CompletionResult, LlmClient } from '../../llm/llm-client.ts';
import type { Logger } from '../../logger.ts';
import { JOURNAL, type JournalReplay } from './run-journal.ts';
import type { BudgetHold, CallSpending, RunSpending } from './run-spending.ts';
import { type Steer, type SteeringInbox, steerTurn } from './steering.ts';

/** How a run reads the messages people send it: at each model call, those for the call's branch. */
export interface CallSteering {
  inbox: SteeringInbox;
  /**
   * The call read these (live, or its past did): they join the run's conversation. `cut` holds
   * the words of the call an interrupt cut, when one did.
   */
  read(steers: Steer[], nodeId: string | undefined, replayed: boolean, cut?: string): Promise<void>;
}

/**
 * The model as a run sees it: every request carries the run's id; each call is journaled (keyed
 * by its purpose and branch), so a call the run's past made is not made again; each call's
 * reported token usage adds to `usage` (a continued run's past is the other run's spending) and is
 * checked against the budget; each call leaves a debug line.
 */
export function observedModel(
  llm: LlmClient,
  run: {
    runId: string;
    replay: JournalReplay;
    countReplayed: boolean;
    spending: RunSpending;
    onSpent: (call: CallSpending, nodeId: string | undefined) => Promise<void>;
    onFallback: (purpose: string, result: CompletionResult<unknown>, nodeId: string | undefined) => Promise<void>;
    logger: Logger;
    checkBudget: () => void;
    /**
     * Waits until the call about to be made fits the run's cost budget beside the calls in flight,
     * and returns its hold on it; throws CostBudgetReached when it would pass the budget.
     */
    beforeCall?: (signal: AbortSignal) => Promise<BudgetHold | undefined>;
    steering?: CallSteering;
  },
): LlmClient {
  const { runId, replay, spending, logger, checkBudget } = run;
  return {
    modelName: llm.modelName,
    isDemo: llm.isDemo,
    async complete<T>(request: CompletionRequest<T>): Promise<CompletionResult<T>> {
      const started = performance.now();
      const key = request.nodeId ? `${request.purpose}@${request.nodeId}` : request.purpose;
      let hold: BudgetHold | undefined;
      let outcome: { value: CompletionResult<T>; replayed: boolean };
      try {
        outcome = await replay.once(JOURNAL.model, key, async (): Promise<CompletionResult<T>> => {
          // A call the run's past made is read back; a new one is made only within the cost budget.
          hold = await run.beforeCall?.(request.signal);
          try {
            return await completeReading(llm, { ...request, runId }, run.steering);
          } catch (error) {
            // Replies the call received and could not use (data off its schema, cut at the output limit) were spent all the same.
            if (error instanceof ModelError && error.spent) {
              const spent = spending.add(request.purpose, llm.modelName, { text: '', toolCalls: [], ...error.spent });
              hold?.release();
              if (spent) await run.onSpent(spent, request.nodeId);
              // Past the token budget with them, the run ends so rather than asking again.
              checkBudget();
            }
            throw error;
          }
        });
        // The call's cost is added before its hold is given back, so a call waiting for it sees one or the other.
        if (!outcome.replayed || run.countReplayed) {
          const spent = spending.add(request.purpose, llm.modelName, outcome.value);
          hold?.release();
          if (spent) await run.onSpent(spent, request.nodeId);
        }
      } finally {
        hold?.release();
      }
      // The messages the call read stay on its result (its journal entry keeps them): a strategy may keep them too.
      const { value: result, replayed } = outcome;
      const { steers } = result;
      // What the past's call read joins the conversation again; the run never reads it twice.
      if (replayed && steers?.length) {
        run.steering?.inbox.taken(steers.map((steer) => steer.id));
        await run.steering?.read(steers, request.nodeId, true);
      }
      if (!replayed) await run.onFallback(request.purpose, result, request.nodeId);
      if (logger.isLevelEnabled?.('debug') ?? true) {
        logger.debug(
          {
            purpose: request.purpose,
            replayed,
            ...(request.nodeId ? { node_id: request.nodeId } : {}),
            duration_ms: Math.round(performance.now() - started),
            tool_calls: result.toolCalls.length,
            ...(result.usage ? { prompt_tokens: result.usage.promptTokens, completion_tokens: result.usage.completionTokens } : {}),
            ...(result.model ? { model: result.model } : {}),
            ...(result.requestId ? { request_id: result.requestId } : {}),
          },
          'model call done',
        );
      }
      checkBudget();
      return result;
    },
  };
}

/**
 * Makes a call, reading first the messages waiting for its branch (they go with it, as user turns
 * after its messages). An interrupt for the branch cuts the call: its words so far stay as the
 * model's, and the call is made again at once with the message that cut it.
 */
async function completeReading<T>(llm: LlmClient, request: CompletionRequest<T>, steering: CallSteering | undefined): Promise<CompletionResult<T>> {
  if (!steering) return llm.complete(request);
  let messages = request.messages;
  const read: Steer[] = [];
  let cut: string | undefined;
  for (;;) {
    const steers = steering.inbox.take(request.nodeId);
    if (steers.length > 0 || cut !== undefined) {
      await steering.read(steers, request.nodeId, false, cut);
      messages = [...messages, ...steers.map(steerTurn)];
      read.push(...steers);
    }
    const call = steering.inbox.call(request.nodeId, request.signal);
    let partial = '';
    try {
      const result = await llm.complete({
        ...request,
        messages,
        signal: call.signal,
        onDelta: (delta) => {
          partial += delta;
          request.onDelta?.(delta);
        },
      });
      return read.length > 0 ? { ...result, steers: read } : result;
    } catch (error) {
      if (!call.interrupted) throw error;
      cut = partial;
      if (partial.trim()) messages = [...messages, { role: 'assistant', content: partial }];
    } finally {
      call.end();
    }
  }
}
