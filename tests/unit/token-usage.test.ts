import { readTokenUsage, tokenCount } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('token counts reported by a model', () => {
  it.each([0, 1, 12_345, 3_000_000_000, Number.MAX_SAFE_INTEGER])('accepts %s as a count', (value) => {
    expect(tokenCount(value)).toBe(value);
  });

  it.each([
    ['a string of letters', 'abc'],
    ['a numeric string', '12'],
    ['a negative number', -1],
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a value above Number.MAX_SAFE_INTEGER', Number.MAX_SAFE_INTEGER + 2],
    ['1e300', 1e300],
    ['a big integer', 10n],
    ['an object', { value: 3 }],
    ['a boolean', true],
  ])('rejects %s', (_, value) => {
    expect(tokenCount(value)).toBeUndefined();
  });

  it('keeps valid fields, and names each invalid one without its value', () => {
    const invalid: string[] = [];
    expect(readTokenUsage({ prompt_tokens: 'abc', completion_tokens: 3_000_000_000 }, (field) => invalid.push(field))).toEqual({
      promptTokens: 0,
      completionTokens: 3_000_000_000,
    });
    expect(invalid).toEqual(['prompt_tokens']);
  });

  it('reports no usage when neither count is usable, and says nothing of missing fields', () => {
    const invalid: string[] = [];
    expect(readTokenUsage({ prompt_tokens: -4, completion_tokens: Number.NaN }, (field) => invalid.push(field))).toBeUndefined();
    expect(invalid).toEqual(['prompt_tokens', 'completion_tokens']);
    expect(readTokenUsage({ total_tokens: 9 }, () => invalid.push('unexpected'))).toBeUndefined();
    expect(readTokenUsage(undefined, () => invalid.push('unexpected'))).toBeUndefined();
    expect(readTokenUsage('abc', () => invalid.push('unexpected'))).toBeUndefined();
    expect(invalid).toEqual(['prompt_tokens', 'completion_tokens']);
  });
});
