import type { AgentUsage } from '@stepwise/shared-types';
import type { CompletionResult } from '../../llm/llm-client.ts';
import { roundUsd } from '../../llm/model-prices.ts';
import type { TokenUsage } from '../../messages.ts';
import { abortReason } from '../../util/abort.ts';
import type { RunTotals } from './run-events.ts';

/** One call's figures as agent_usage carries them. */
export type CallSpending = Omit<AgentUsage, 'type' | 'update_type' | 'seq' | 'ts' | 'run_id' | 'node_id'>;

/** A model call's share of the cost budget, held while it is in flight and given back once its cost is added (or it failed). */
export interface BudgetHold {
  release(): void;
}

/** Whether a model call may be made within a cost budget: `go` with its hold, `over` (the run must end), or `unpriced` (no budget can hold). */
export type BudgetCheck = { kind: 'go'; hold: BudgetHold } | { kind: 'over'; spentUsd: number } | { kind: 'unpriced' };

/**
 * What a run has spent: its tokens (the object the token budget reads) and its cost in USD, which
 * turns null for good once a call's cost is unknown (a model without a price): never a guess.
 * One per run, shared by all its branches (parallel tasks, plan steps), so they share its budget.
 */
export class RunSpending {
  private costUsd: number | null = 0;
  /** Calls whose cost is known, for the cost budget's estimate of the next one. */
  private pricedCalls = 0;
  /** Calls in flight under the cost budget, and the estimates they hold. */
  private inFlight = 0;
  private heldUsd = 0;
  /** Calls waiting for one in flight to settle before they check the budget again. */
  private waiting: (() => void)[] = [];

  constructor(readonly usage: TokenUsage) {}

  /** Adds one call's usage and cost; returns its figures for agent_usage, or undefined when it reported neither. */
  add(purpose: string, fallbackModel: string, result: CompletionResult<unknown>): CallSpending | undefined {
    const call = result.usage;
    this.usage.promptTokens += call?.promptTokens ?? 0;
    this.usage.completionTokens += call?.completionTokens ?? 0;
    this.usage.cachedTokens = (this.usage.cachedTokens ?? 0) + (call?.cachedTokens ?? 0);
    this.usage.reasoningTokens = (this.usage.reasoningTokens ?? 0) + (call?.reasoningTokens ?? 0);
    const cost = typeof result.costUsd === 'number' ? result.costUsd : null;
    if (cost !== null) this.pricedCalls++;
    this.costUsd = this.costUsd === null || cost === null ? null : roundUsd(this.costUsd + cost);
    if (!call && cost === null) return undefined;
    return {
      purpose,
      model: result.model ?? fallbackModel,
      prompt_tokens: call?.promptTokens ?? 0,
      completion_tokens: call?.completionTokens ?? 0,
      cached_tokens: call?.cachedTokens ?? 0,
      reasoning_tokens: call?.reasoningTokens ?? 0,
      cost_usd: cost,
      run_cost_usd: this.costUsd,
      usage: this.totals().usage,
    };
  }

  /**
   * Holds a share of `budgetUsd` for one more model call, once it fits: what the run has spent,
   * what the calls in flight hold, and this call's estimate (what a call has cost the run on
   * average so far) must not pass the budget. A call that fits only once calls in flight are
   * done waits for them (or for `signal`); before any call's cost is known, calls go one at a
   * time. So parallel branches cannot all pass one check at once, and a run passes its budget by
   * at most about one call. `over` when even with nothing in flight the call would pass it;
   * `unpriced` while the cost is unknown (a model without a price).
   */
  async reserve(budgetUsd: number, signal: AbortSignal): Promise<BudgetCheck> {
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      if (this.costUsd === null) return { kind: 'unpriced' };
      const estimate = this.pricedCalls > 0 ? this.costUsd / this.pricedCalls : undefined;
      if (this.costUsd + (estimate ?? 0) > budgetUsd) return { kind: 'over', spentUsd: this.costUsd };
      const fits = estimate === undefined ? this.inFlight === 0 : roundUsd(this.costUsd + this.heldUsd + estimate) <= budgetUsd;
      if (fits) return { kind: 'go', hold: this.hold(estimate ?? 0) };
      await this.nextRelease(signal);
    }
  }

  private hold(amountUsd: number): BudgetHold {
    this.inFlight++;
    this.heldUsd = roundUsd(this.heldUsd + amountUsd);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.inFlight--;
        this.heldUsd = this.inFlight === 0 ? 0 : roundUsd(this.heldUsd - amountUsd);
        const waiting = this.waiting;
        this.waiting = [];
        for (const wake of waiting) wake();
      },
    };
  }

  private nextRelease(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(abortReason(signal));
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  /** The run's totals, as its ending events and the history carry them. */
  totals(): RunTotals {
    return {
      usage: {
        prompt_tokens: this.usage.promptTokens,
        completion_tokens: this.usage.completionTokens,
        cached_tokens: this.usage.cachedTokens ?? 0,
        reasoning_tokens: this.usage.reasoningTokens ?? 0,
      },
      cost_usd: this.costUsd,
    };
  }
}
