import type { TokenUsage } from './llm-client.ts';

/** The usage fields a Chat Completions endpoint reports, by their wire names. */
const FIELDS = { prompt_tokens: 'promptTokens', completion_tokens: 'completionTokens' } as const;
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
 * named to `onInvalid`; it then adds nothing to the totals (0), as a missing one does. Undefined
 * when neither count is usable.
 */
export function readTokenUsage(reported: unknown, onInvalid: (field: TokenUsageField) => void): TokenUsage | undefined {
  if (typeof reported !== 'object' || reported === null) return undefined;
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  let known = false;
  for (const [field, key] of Object.entries(FIELDS) as [TokenUsageField, keyof TokenUsage][]) {
    const value: unknown = (reported as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    const count = tokenCount(value);
    if (count === undefined) {
      onInvalid(field);
      continue;
    }
    usage[key] = count;
    known = true;
  }
  return known ? usage : undefined;
}
