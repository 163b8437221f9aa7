import type { ModelPrice } from '../config/config-file.ts';
import type { TokenUsage } from './llm-client.ts';

/**
 * OpenAI's list prices in USD per million tokens (input, cached input, output) for common models.
 * The config file's "prices" add models and override these; a model in neither costs null.
 */
export const BUILT_IN_PRICES: Readonly<Record<string, ModelPrice>> = {
  'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4 },
  'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10 },
  'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 },
  o1: { input: 15, cachedInput: 7.5, output: 60 },
  'o1-mini': { input: 1.1, cachedInput: 0.55, output: 4.4 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
  'gpt-4-turbo': { input: 10, output: 30 },
  'gpt-3.5-turbo': { input: 0.5, output: 1.5 },
};

/** A dated snapshot (`gpt-4o-2024-08-06`) is priced as its model. */
const SNAPSHOT_DATE = /-\d{4}-\d{2}-\d{2}$/;

/** The price of `model`: the config file's first, then the built-in table; undefined when neither knows it. */
export function priceOf(model: string, overrides: Readonly<Record<string, ModelPrice>>): ModelPrice | undefined {
  const undated = model.replace(SNAPSHOT_DATE, '');
  return overrides[model] ?? overrides[undated] ?? BUILT_IN_PRICES[model] ?? BUILT_IN_PRICES[undated];
}

/**
 * What one call cost in USD, or null when the model's price or the call's usage is unknown (never a guess). Cached
 * prompt tokens are charged at the cached price; reasoning tokens are part of the completion's.
 */
export function costOf(model: string, usage: TokenUsage | undefined, overrides: Readonly<Record<string, ModelPrice>>): number | null {
  const price = priceOf(model, overrides);
  // No price, or no usage reported: the cost is unknown, not zero.
  if (!price || !usage) return null;
  const cached = Math.min(usage.cachedTokens ?? 0, usage.promptTokens);
  const dollars = (usage.promptTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + usage.completionTokens * price.output;
  return roundUsd(dollars / 1_000_000);
}

/** Sums of costs keep twelve decimals: enough for a millionth of a cent, free of float dust. */
export function roundUsd(value: number): number {
  return Math.round(value * 1e12) / 1e12;
}
