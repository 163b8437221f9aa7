import type { TokenUsage } from './llm-client.ts';

/** The usage fields a Chat Completions endpoint reports, by their wire names (nested ones with a dot). */
const FIELDS = {
  prompt_tokens: 'promptTokens',
  completion_tokens: 'completionTokens',
  'prompt_tokens_details.cached_tokens': 'cachedTokens',
  'completion_tokens_details.reasoning_tokens': 'reasoningTokens',
} as const;
export type TokenUsageField = keyof typeof FIELDS;

/**
 * A token count as an endpoint reported it, or undefined when it is not a whole number from 0 to
 * Number.MAX_SAFE_INTEGER: strings, negatives, fractions, NaN and huge values are not counts.
 */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * Reads the usage object of a reply. A field that is present but not a count is left out and
 * named to `onInvalid`; it then adds nothing to the totals (0), as a missing one does. Cached and
 * reasoning tokens appear only when the endpoint reported them. Undefined when neither the prompt
 * nor the completion count is usable.
 */
export function readTokenUsage(reported: unknown, onInvalid: (field: TokenUsageField) => void): TokenUsage | undefined {
  if (typeof reported !== 'object' || reported === null) return undefined;
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  let known = false;
  for (const [field, key] of Object.entries(FIELDS) as [TokenUsageField, keyof TokenUsage][]) {
    const value = fieldAt(reported, field);
    if (value === undefined || value === null) continue;
    const count = tokenCount(value);
    if (count === undefined) {
      onInvalid(field);
      continue;
    }
    usage[key] = count;
    if (key === 'promptTokens' || key === 'completionTokens') known = true;
  }
  return known ? usage : undefined;
}

/** Two calls' usage together (a data call asked for twice); undefined when neither reported any. */
export function addUsage(first: TokenUsage | undefined, second: TokenUsage | undefined): TokenUsage | undefined {
  if (!first) return second;
  if (!second) return first;
  const sum: TokenUsage = { promptTokens: first.promptTokens + second.promptTokens, completionTokens: first.completionTokens + second.completionTokens };
  if (first.cachedTokens !== undefined || second.cachedTokens !== undefined) sum.cachedTokens = (first.cachedTokens ?? 0) + (second.cachedTokens ?? 0);
  if (first.reasoningTokens !== undefined || second.reasoningTokens !== undefined)
    sum.reasoningTokens = (first.reasoningTokens ?? 0) + (second.reasoningTokens ?? 0);
  return sum;
}

function fieldAt(reported: object, path: string): unknown {
  let value: unknown = reported;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
