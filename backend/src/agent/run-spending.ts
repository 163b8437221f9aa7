import type { AgentUsage } from '@stepwise/shared-types';
import type { CompletionResult } from '../llm/llm-client.ts';
import { roundUsd } from '../llm/model-prices.ts';
import type { TokenUsage } from '../messages.ts';
import type { RunTotals } from './run-events.ts';

/** One call's figures as agent_usage carries them. */
export type CallSpending = Omit<AgentUsage, 'type' | 'update_type' | 'seq' | 'ts' | 'run_id' | 'node_id'>;

/**
 * What a run has spent: its tokens (the object the token budget reads) and its cost in USD, which
 * turns null for good once a call's cost is unknown (a model without a price): never a guess.
 */
export class RunSpending {
  private costUsd: number | null = 0;
  /** Calls whose cost is known, for the cost budget's estimate of the next one. */
  private pricedCalls = 0;

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
   * Whether the next call would pass `budgetUsd`: what the run has spent plus what a call has cost
   * it on average so far. Undefined while the cost is unknown (a model without a price).
   */
  wouldPass(budgetUsd: number): boolean | undefined {
    if (this.costUsd === null) return undefined;
    const next = this.pricedCalls > 0 ? this.costUsd / this.pricedCalls : 0;
    return this.costUsd + next > budgetUsd;
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
