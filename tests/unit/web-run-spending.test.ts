import { describe, expect, it } from 'vitest';
import { chatSpending, formatCost, formatTokens } from '../../frontend/src/lib/spending.ts';
import { type Action, reduce } from '../../frontend/src/state/reducer.ts';
import { initialViewState, type ViewState } from '../../frontend/src/state/view-state.ts';

const ts = '2026-01-01T00:00:00.000Z';
let seq = 0;
const update = (runId: string, updateType: string, fields: Record<string, unknown> = {}) => ({
  type: 'agent_update',
  update_type: updateType,
  seq: ++seq,
  ts,
  run_id: runId,
  ...fields,
});
const apply = (state: ViewState, ...values: Record<string, unknown>[]) =>
  values.reduce((next, value) => reduce(next, { kind: 'server_event', event: value as never } satisfies Action), state);
const totals = (prompt: number, completion: number, cached = 0, reasoning = 0) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  cached_tokens: cached,
  reasoning_tokens: reasoning,
});

describe("a run's tokens and cost in the web app", () => {
  it('follows agent_usage live and takes the totals of the ending event', () => {
    let state = apply(initialViewState, update('a', 'agent_start', { max_steps: 5, strategy: 'roa' }));
    state = apply(
      state,
      update('a', 'agent_usage', {
        purpose: 'roa.reason',
        model: 'gpt-4o',
        ...totals(1_000, 100, 200),
        cost_usd: 0.0035,
        run_cost_usd: 0.0035,
        usage: totals(1_000, 100, 200),
      }),
    );
    expect(state.runs.a!.spending).toEqual({ promptTokens: 1_000, completionTokens: 100, cachedTokens: 200, reasoningTokens: 0, costUsd: 0.0035 });
    expect(state.runs.a!.strategyEvents).toEqual([]);

    state = apply(state, update('a', 'agent_completion', { steps: 1, reason: 'answered', usage: totals(3_000, 300, 200, 40), cost_usd: 0.01 }));
    expect(state.runs.a!.spending).toEqual({ promptTokens: 3_000, completionTokens: 300, cachedTokens: 200, reasoningTokens: 40, costUsd: 0.01 });
  });

  it("adds up the chat's runs; one run of unknown cost makes the total's cost unknown", () => {
    let state = apply(
      initialViewState,
      update('a', 'agent_start', { max_steps: 5 }),
      update('a', 'agent_completion', { steps: 1, usage: totals(1_000, 500), cost_usd: 0.5 }),
      update('b', 'agent_start', { max_steps: 5 }),
      update('b', 'agent_error', { step: 1, message: 'x', usage: totals(2_000, 0), cost_usd: 0.25 }),
    );
    expect(chatSpending(state.runs)).toEqual({ promptTokens: 3_000, completionTokens: 500, cachedTokens: 0, reasoningTokens: 0, costUsd: 0.75 });

    state = apply(
      state,
      update('c', 'agent_start', { max_steps: 5 }),
      update('c', 'agent_stopped', { reason: 'user', step: 1, usage: totals(10, 1), cost_usd: null }),
    );
    expect(chatSpending(state.runs)).toMatchObject({ promptTokens: 3_010, costUsd: null });
  });

  it('says nothing for a chat whose runs reported no usage', () => {
    const state = apply(initialViewState, update('a', 'agent_start', { max_steps: 5 }), update('a', 'agent_completion', { steps: 1 }));
    expect(chatSpending(state.runs)).toBeUndefined();
  });

  it('writes tokens and costs briefly', () => {
    expect([formatTokens(1), formatTokens(980), formatTokens(12_345), formatTokens(1_234_567)]).toEqual([
      '1 token',
      '980 tokens',
      '12.3k tokens',
      '1.2M tokens',
    ]);
    expect([formatCost(null), formatCost(0), formatCost(0.00042), formatCost(1.5)]).toEqual(['cost unknown', '$0', '$0.0004', '$1.50']);
  });
});
