import { costOf, globMatches, modelFor, priceOf } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('the price table', () => {
  it('prices a dated snapshot as its model, and the config file over the built-in table', () => {
    expect(priceOf('gpt-4o-2024-08-06', {})).toEqual(priceOf('gpt-4o', {}));
    expect(priceOf('gpt-4o', { 'gpt-4o': { input: 1, output: 1 } })).toEqual({ input: 1, output: 1 });
    expect(priceOf('llama3.1:70b', {})).toBeUndefined();
  });

  it('charges cached prompt tokens at the cached price, and the input price when there is none', () => {
    const usage = { promptTokens: 1_000_000, completionTokens: 1_000_000, cachedTokens: 500_000 };
    expect(costOf('priced', usage, { priced: { input: 2, cachedInput: 1, output: 4 } })).toBe(1 + 0.5 + 4);
    expect(costOf('plain', usage, { plain: { input: 2, output: 4 } })).toBe(2 + 4);
  });

  it('costs null for an unknown model or a call without usage, never a guess', () => {
    expect(costOf('in-house', { promptTokens: 10, completionTokens: 10 }, {})).toBeNull();
    expect(costOf('gpt-4o', undefined, {})).toBeNull();
  });
});

describe('models per purpose', () => {
  it.each([
    ['research.*', 'research.task', true],
    ['research.*', 'research', false],
    ['*', 'chat', true],
    ['solver.expert_evaluator', 'solver.expert_evaluatorX', false],
    ['roa.re*', 'roa.reason', true],
    ['plan_execute.plan', 'plan_executeXplan', false],
  ])('glob %s matches %s: %s', (glob, purpose, matches) => {
    expect(globMatches(glob, purpose)).toBe(matches);
  });

  it('takes the first route that matches, with its params over LLM_PARAMS, else LLM_MODEL with LLM_PARAMS', () => {
    const llm = {
      model: 'default-model',
      params: { seed: 1, reasoning_effort: 'low' },
      models: [
        { purpose: 'research.task', model: 'first', params: { reasoning_effort: 'high' } },
        { purpose: 'research.*', model: 'second', params: {} },
      ],
    };
    expect(modelFor('research.task', llm)).toEqual({ model: 'first', params: { seed: 1, reasoning_effort: 'high' } });
    expect(modelFor('research.plan', llm)).toEqual({ model: 'second', params: { seed: 1, reasoning_effort: 'low' } });
    expect(modelFor('chat', llm)).toEqual({ model: 'default-model', params: { seed: 1, reasoning_effort: 'low' } });
  });
});
