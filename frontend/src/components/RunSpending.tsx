import type { RunSpendingView, RunView } from '../state/view-state.ts';

/** A token count in words: "980 tokens", "12.3k tokens", "1.2M tokens". */
export function formatTokens(count: number): string {
  if (count < 1_000) return `${count} token${count === 1 ? '' : 's'}`;
  if (count < 1_000_000) return `${trim(count / 1_000)}k tokens`;
  return `${trim(count / 1_000_000)}M tokens`;
}

/** A cost in USD to the cent, or to four places under a cent; "cost unknown" when a model had no price. */
export function formatCost(usd: number | null): string {
  if (usd === null) return 'cost unknown';
  if (usd === 0) return '$0';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

function trim(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1).replace(/\.0$/, '');
}

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

/** The whole chat's runs together: their tokens and cost (unknown once one run's is). */
export function chatSpending(runs: Readonly<Record<string, RunView>>): RunSpendingView | undefined {
  const spent = Object.values(runs).flatMap((run) => (run.spending ? [run.spending] : []));
  if (spent.length === 0) return undefined;
  return spent.reduce((total, run) => ({
    promptTokens: total.promptTokens + run.promptTokens,
    completionTokens: total.completionTokens + run.completionTokens,
    cachedTokens: total.cachedTokens + run.cachedTokens,
    reasoningTokens: total.reasoningTokens + run.reasoningTokens,
    costUsd: total.costUsd === null || run.costUsd === null ? null : total.costUsd + run.costUsd,
  }));
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
