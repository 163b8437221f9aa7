import { findExpression } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('the demo model’s arithmetic detector', () => {
  it.each([
    ['What is (17+25)*3?', '(17+25)*3'],
    ['compute 2^10 please', '2^10'],
    ['sqrt(16) + 1, thanks', 'sqrt(16) + 1'],
    ['how much is 12.5 * 4', '12.5 * 4'],
  ])('finds the arithmetic in %s', (text, expression) => {
    expect(findExpression(text)).toBe(expression);
  });

  it.each(['Who wrote Hamlet?', 'I am 42 years old', 'help me'])('finds none in %s', (text) => {
    expect(findExpression(text)).toBeUndefined();
  });
});
