import { costOf, globMatches, modelFor, priceOf, seesByName } from '@stepwise/backend';
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
      vision: 'auto' as const,
      models: [
        { purpose: 'research.task', model: 'first', params: { reasoning_effort: 'high' } },
        { purpose: 'research.*', model: 'second', params: {} },
      ],
    };
    expect(modelFor('research.task', llm)).toEqual({ model: 'first', params: { seed: 1, reasoning_effort: 'high' }, vision: false });
    expect(modelFor('research.plan', llm)).toEqual({ model: 'second', params: { seed: 1, reasoning_effort: 'low' }, vision: false });
    expect(modelFor('chat', llm)).toEqual({ model: 'default-model', params: { seed: 1, reasoning_effort: 'low' }, vision: false });
  });

  it('knows whether a model sees images: its route says so, else LLM_VISION, by name when auto', () => {
    const llm = {
      model: 'gpt-4o-mini',
      params: {},
      vision: 'auto' as const,
      models: [
        { purpose: 'roa.*', model: 'llama3.1', params: {} },
        { purpose: 'chat', model: 'my-local-vl', params: {}, vision: false },
        { purpose: 'solver.*', model: 'custom', params: {}, vision: true },
      ],
    };
    expect(modelFor('plan_execute.plan', llm).vision).toBe(true);
    expect(modelFor('roa.reason', llm).vision).toBe(false);
    expect(modelFor('chat', llm).vision).toBe(false);
    expect(modelFor('solver.solve', llm).vision).toBe(true);
    expect(modelFor('roa.reason', { ...llm, vision: true }).vision).toBe(true);
    expect(modelFor('plan_execute.plan', { ...llm, vision: false }).vision).toBe(false);
    expect(['gpt-4.1', 'claude-sonnet-4', 'llava:13b', 'qwen2.5-vl-7b', 'llama3.2-vision', 'openai/gpt-5-mini'].every(seesByName)).toBe(true);
    expect(['gpt-3.5-turbo', 'llama3.1', 'mistral-small'].some(seesByName)).toBe(false);
  });
});
