import { chatSpending, formatCost, formatTokens } from '../lib/spending.ts';
import type { RunSpendingView, RunView } from '../state/view-state.ts';

function details(spending: RunSpendingView): string {
  return [
    `${spending.promptTokens.toLocaleString('en-US')} prompt tokens (${spending.cachedTokens.toLocaleString('en-US')} cached)`,
    `${spending.completionTokens.toLocaleString('en-US')} completion tokens (${spending.reasoningTokens.toLocaleString('en-US')} reasoning)`,
    spending.costUsd === null ? 'cost unknown: a model without a price in the price table' : `$${spending.costUsd.toFixed(6)}`,
  ].join('\n');
}

/** A run's tokens and cost so far, updated after each model call. */
export function RunSpending({ spending }: { spending: RunSpendingView | undefined }) {
  if (!spending) return null;
  return (
    <span className="run-spending" data-testid="run-spending" title={details(spending)}>
      {formatTokens(spending.promptTokens + spending.completionTokens)} · {formatCost(spending.costUsd)}
    </span>
  );
}

/** The chat's total, shown under its conversation. */
export function ChatSpending({ runs }: { runs: Readonly<Record<string, RunView>> }) {
  const total = chatSpending(runs);
  if (!total) return null;
  return (
    <div className="chat-spending" data-testid="chat-spending" title={details(total)}>
      This chat: {formatTokens(total.promptTokens + total.completionTokens)} · {formatCost(total.costUsd)}
    </div>
  );
}
