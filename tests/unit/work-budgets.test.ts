import { describe, expect, it } from 'vitest';
import { WorkBudgets } from '@stepwise/backend';

describe('WorkBudgets', () => {
  it('charges what a piece cost once it is done, refuses a client in debt until it has refilled, and leaves other clients alone', () => {
    let now = 0;
    const budgets = new WorkBudgets(1_000, 2, () => now);
    const first = budgets.begin('alice');
    if (typeof first !== 'function') throw new Error('refused');
    first(1_600);
    // 600 owed: a minute's worth refills 1,000, so 0.6 minutes and a little more until she may go on.
    const refused = budgets.begin('alice');
    expect(refused).toMatchObject({ kind: 'spent' });
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(36_000);
    expect(typeof budgets.begin('bob')).toBe('function');
    now = 37_000;
    expect(typeof budgets.begin('alice')).toBe('function');
  });

  it('lets a client have only so many pieces going at once', () => {
    const budgets = new WorkBudgets(1_000_000, 2, () => 0);
    const [one, two] = [budgets.begin('alice'), budgets.begin('alice')];
    expect(budgets.begin('alice')).toEqual({ kind: 'busy' });
    if (typeof one !== 'function' || typeof two !== 'function') throw new Error('refused');
    one(10);
    one(10);
    expect(typeof budgets.begin('alice')).toBe('function');
  });
});
