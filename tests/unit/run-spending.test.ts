// The cost budget shared by a run's branches: calls in flight hold their share of it.
import { type BudgetCheck, RunSpending } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

const priced = (costUsd: number) => ({ text: '', toolCalls: [], usage: { promptTokens: 1, completionTokens: 0 }, costUsd });

/** A call under the budget: reserve, then (when let go) its cost added and its hold given back, as the kernel does. */
async function call(spending: RunSpending, budget: number, cost: number, signal: AbortSignal, done: Promise<void>): Promise<BudgetCheck['kind']> {
  const check = await spending.reserve(budget, signal);
  if (check.kind !== 'go') return check.kind;
  await done;
  spending.add('test', 'model', priced(cost));
  check.hold.release();
  return 'go';
}

/** Waits until the microtasks queued so far (and those they queue) have run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the cost budget of a run', () => {
  it('eight parallel calls at $0.1 under a $0.4 budget: three hold their share beside the first call, the rest end the run, spent $0.4', async () => {
    const spending = new RunSpending({ promptTokens: 0, completionTokens: 0 });
    const signal = new AbortController().signal;
    expect(await call(spending, 0.4, 0.1, signal, Promise.resolve())).toBe('go');
    let finish!: () => void;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const calls = Array.from({ length: 8 }, () => call(spending, 0.4, 0.1, signal, done));
    await settle();
    finish();
    const kinds = await Promise.all(calls);
    expect(kinds.filter((kind) => kind === 'go')).toHaveLength(3);
    expect(kinds.filter((kind) => kind === 'over')).toHaveLength(5);
    expect(spending.totals().cost_usd).toBeCloseTo(0.4, 10);
  });

  it('before any call has a known cost, calls go one at a time', async () => {
    const spending = new RunSpending({ promptTokens: 0, completionTokens: 0 });
    const signal = new AbortController().signal;
    const first = await spending.reserve(1, signal);
    let second: BudgetCheck | undefined;
    void spending.reserve(1, signal).then((check) => {
      second = check;
    });
    await settle();
    expect(second).toBeUndefined();
    spending.add('test', 'model', priced(0.6));
    if (first.kind === 'go') first.hold.release();
    await settle();
    // The first call cost $0.6: a second of that estimate would pass $1.
    expect(second).toEqual({ kind: 'over', spentUsd: 0.6 });
  });

  it('a call waiting for its share gives up when its signal aborts, and a hold given back twice counts once', async () => {
    const spending = new RunSpending({ promptTokens: 0, completionTokens: 0 });
    const stop = new AbortController();
    const first = await spending.reserve(1, stop.signal);
    const waiting = spending.reserve(1, stop.signal);
    stop.abort();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    if (first.kind !== 'go') throw new Error('the first call should go');
    first.hold.release();
    first.hold.release();
    expect((await spending.reserve(1, new AbortController().signal)).kind).toBe('go');
  });

  it('with a model without a price the budget cannot hold and calls are not held back', async () => {
    const spending = new RunSpending({ promptTokens: 0, completionTokens: 0 });
    spending.add('test', 'model', { text: '', toolCalls: [], usage: { promptTokens: 1, completionTokens: 0 }, costUsd: null });
    expect(await spending.reserve(0, new AbortController().signal)).toEqual({ kind: 'unpriced' });
  });
});
