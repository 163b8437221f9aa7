import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize, answeredInOneStep } from '../helpers/ws-client.ts';

const { start } = useScriptedStepwise({ LLM_MODEL: 'gpt-4o-mini' });

function updates(events: Record<string, unknown>[], kind: string): Record<string, unknown>[] {
  return events.filter((event) => event.update_type === kind);
}

describe('usage and cost of a run', () => {
  it('sends agent_usage after each model call, totals on agent_completion, and keeps them in the history API', async () => {
    const { llm, client, server } = await start();
    llm.enqueue(
      { text: reasonText('Plan.', { finish: true }), usage: { prompt_tokens: 1_000, completion_tokens: 200, cached_tokens: 400, reasoning_tokens: 50 } },
      { text: observeText('Done.', { final_answer: 'Answer.' }), usage: { prompt_tokens: 2_000, completion_tokens: 100 } },
    );
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();

    expect(summarize(events)).toEqual(answeredInOneStep());
    const runId = String(events.find((event) => event.update_type === 'agent_start')!.run_id);
    // gpt-4o-mini: $0.15 in, $0.075 cached in, $0.60 out per million tokens.
    const first = (600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1e6;
    const second = (2_000 * 0.15 + 100 * 0.6) / 1e6;
    const usage = updates(events, 'agent_usage');
    expect(usage.map(({ seq: _seq, ts: _ts, cost_usd: _cost, run_cost_usd: _runCost, usage: _totals, ...call }) => call)).toEqual([
      {
        type: 'agent_update',
        update_type: 'agent_usage',
        run_id: runId,
        purpose: 'roa.reason',
        model: 'gpt-4o-mini',
        prompt_tokens: 1_000,
        completion_tokens: 200,
        cached_tokens: 400,
        reasoning_tokens: 50,
      },
      {
        type: 'agent_update',
        update_type: 'agent_usage',
        run_id: runId,
        purpose: 'roa.observe',
        model: 'gpt-4o-mini',
        prompt_tokens: 2_000,
        completion_tokens: 100,
        cached_tokens: 0,
        reasoning_tokens: 0,
      },
    ]);
    expect(usage[0]!.cost_usd).toBeCloseTo(first, 12);
    expect(usage[1]!.run_cost_usd).toBeCloseTo(first + second, 12);
    // Each agent_usage comes right after its call, before what the call's answer leads to.
    expect(events.map((event) => event.update_type).filter((kind) => ['agent_usage', 'agent_reason', 'agent_observe'].includes(String(kind)))).toEqual([
      'agent_usage',
      'agent_reason',
      'agent_usage',
      'agent_observe',
    ]);

    const totals = { prompt_tokens: 3_000, completion_tokens: 300, cached_tokens: 400, reasoning_tokens: 50 };
    const completion = updates(events, 'agent_completion')[0]!;
    expect(completion.usage).toEqual(totals);
    expect(completion.cost_usd).toBeCloseTo(first + second, 12);

    const detail = (await (await fetch(`${server.url}/api/sessions/${String(client.session.session_id)}`)).json()) as { runs: Record<string, unknown>[] };
    expect(detail.runs).toHaveLength(1);
    expect(detail.runs[0]).toMatchObject({ id: runId, prompt_tokens: 3_000, completion_tokens: 300, cached_tokens: 400, reasoning_tokens: 50 });
    expect(detail.runs[0]!.cost_usd).toBeCloseTo(first + second, 12);
  });

  it('costs null for a model without a price, and a failed run carries its totals on agent_error', async () => {
    const { llm, client } = await start({ LLM_MODEL: 'in-house-llm', LLM_MAX_RETRIES: '0' });
    llm.enqueue({ text: reasonText('Plan.'), usage: { prompt_tokens: 100, completion_tokens: 10 } }, { status: 400 });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();

    expect(updates(events, 'agent_usage')).toEqual([
      expect.objectContaining({ model: 'in-house-llm', prompt_tokens: 100, cost_usd: null, run_cost_usd: null }),
    ]);
    expect(updates(events, 'agent_error')[0]).toMatchObject({
      usage: { prompt_tokens: 100, completion_tokens: 10, cached_tokens: 0, reasoning_tokens: 0 },
      cost_usd: null,
    });
  });

  it('a stopped run carries its totals on agent_stopped', async () => {
    const { llm, client } = await start();
    llm.enqueue({ text: reasonText('Plan.'), usage: { prompt_tokens: 1_000_000, completion_tokens: 0 } }, { hang: true });
    client.chat('Hello', { agent_mode: true });
    await llm.waitFor((request) => request.index === 1);
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();

    expect(updates(events, 'agent_stopped')[0]).toMatchObject({ reason: 'user', usage: { prompt_tokens: 1_000_000, completion_tokens: 0 }, cost_usd: 0.15 });
  });
});

describe('models per purpose in the settings', () => {
  it("lists which model serves which purposes, in the config file's order, and routes a run's calls by them", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'stepwise-models-')), 'stepwise.config.json');
    writeFileSync(
      path,
      JSON.stringify({ models: { 'roa.reason': { model: 'gpt-4.1', params: { reasoning_effort: 'high' } }, 'roa.*': { model: 'gpt-4.1-mini' } } }),
    );
    const { llm, client } = await start({ STEPWISE_CONFIG: path, LLM_PARAMS: '{"seed":3}' });
    const settings = client.session.settings as { name: string; value: string; description: string }[];
    expect(settings.filter((setting) => setting.name.startsWith('models.')).map((setting) => [setting.name, setting.value])).toEqual([
      ['models.roa.reason', 'gpt-4.1'],
      ['models.roa.*', 'gpt-4.1-mini'],
    ]);
    expect(settings.find((setting) => setting.name === 'LLM_PARAMS')?.value).toBe('{"seed":3}');

    llm.enqueue({ text: reasonText('Plan.', { finish: true }) }, { text: observeText('Done.', { final_answer: 'Answer.' }) });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(llm.requests.map((request) => [request.purpose, request.body.model])).toEqual([
      ['roa.reason', 'gpt-4.1'],
      ['roa.observe', 'gpt-4.1-mini'],
    ]);
    expect(updates(events, 'agent_usage').map((event) => event.model)).toEqual(['gpt-4.1', 'gpt-4.1-mini']);
  });
});
