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
