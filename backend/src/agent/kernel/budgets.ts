import type { StopReason } from '@stepwise/shared-types';
import { CostBudgetReached } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { TokenUsage } from '../../messages.ts';
import type { AgentControl } from './agent-control.ts';
import type { BudgetHold, RunSpending } from './run-spending.ts';

/** What a run has spent, as its budgets read it. */
export interface Spent {
  /** Milliseconds since the run began. */
  elapsedMs: number;
  tokens: number;
}

/** A budget a run is stopped at: a predicate over what it has spent, and the reason it gives. */
export interface StopCondition {
  reason: StopReason;
  reached(spent: Spent): boolean;
}

/** The wall clock: CHAT_TIMEOUT_MS or AGENT_RUN_TIMEOUT_MS. */
export const timeBudget = (limitMs: number): StopCondition => ({ reason: 'timeout', reached: (spent) => spent.elapsedMs >= limitMs });

/** Tokens, prompt and completion together (AGENT_RUN_TOKEN_BUDGET; 0: none). */
export const tokenBudget = (limit: number): StopCondition => ({ reason: 'token_budget', reached: (spent) => limit > 0 && spent.tokens > limit });

/** Steps: a strategy at its step limit ends with its best answer so far (completion `max_steps`), not with a stop. */
export function atStepLimit(step: number, input: { maxSteps: number }): boolean {
  return step >= input.maxSteps;
}

/**
 * A run's stop conditions, checked after every model call and when the clock runs out: the first
 * one reached stops the run with its reason.
 */
export class RunBudgets {
  private readonly started = performance.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly conditions: readonly StopCondition[],
    private readonly usage: TokenUsage,
    private readonly control: AgentControl,
    private readonly logger: Logger,
  ) {}

  /** What the run has spent so far. */
  spent(): Spent {
    return { elapsedMs: performance.now() - this.started, tokens: this.usage.promptTokens + this.usage.completionTokens };
  }

  /** Stops the run when one of its conditions is reached; the reason, if one was. */
  check(): StopReason | undefined {
    const spent = this.spent();
    const reached = this.conditions.find((condition) => condition.reached(spent));
    if (!reached) return undefined;
    if (!this.control.signal.aborted) this.logger.warn({ reason: reached.reason, ...spent, ...this.usage }, 'run over its budget');
    this.control.stop(reached.reason);
    return reached.reason;
  }

  /** Looks again when the clock would run out (`limitMs`), until it has or the run ends. */
  watchClock(limitMs: number): void {
    const look = (delay: number) => {
      this.timer = setTimeout(() => {
        if (!this.check() && !this.control.signal.aborted) look(Math.max(1, limitMs - this.spent().elapsedMs));
      }, delay);
      this.timer.unref?.();
    };
    look(limitMs);
  }

  /** The run has ended: the clock stops. */
  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * The cost budget (max_cost_usd): each new model call holds its share of it while in flight (so
 * parallel branches share it) and one that would pass it throws CostBudgetReached; with no known
 * price it cannot hold, which the log says once.
 */
export function costBudget(budgetUsd: number | undefined, spending: RunSpending, logger: Logger): (signal: AbortSignal) => Promise<BudgetHold | undefined> {
  let unpriced = false;
  return async (signal) => {
    if (budgetUsd === undefined) return undefined;
    const check = await spending.reserve(budgetUsd, signal);
    switch (check.kind) {
      case 'go':
        return check.hold;
      case 'over':
        throw new CostBudgetReached(budgetUsd, check.spentUsd);
      case 'unpriced':
        if (!unpriced) {
          unpriced = true;
          logger.warn({ budget_usd: budgetUsd }, 'the run has a cost budget but its model has no known price: the budget cannot be enforced');
        }
        return undefined;
      default: {
        const unknown: never = check;
        throw new Error(`Unknown budget check ${String(unknown)}`);
      }
    }
  };
}
