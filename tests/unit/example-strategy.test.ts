import { exampleStrategy } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

describe('a strategy written on the kernel (the example)', () => {
  it('asks for data with a schema, then works each point in its own branch, events carrying node_id', async () => {
    const llm = new ScriptedLlmClient((request) =>
      request.purpose === 'example.points' ? { parsed: { points: ['cost', 'speed', 'risk'] } } : { text: `Thoughts on ${String(request.variables?.point)}.` },
    );
    const { sink, outcome } = inProcessKernel(llm, [exampleStrategy]).start('Should we move?', { strategyOptions: { max_points: 2 } });
    expect(await outcome).toMatchObject({ status: 'completed', steps: 2, answer: '1. Thoughts on cost.\n2. Thoughts on speed.' });
    expect(llm.purposes()).toEqual(['example.points', 'example.point', 'example.point']);
    expect(llm.requests[0]!.schema?.name).toBe('points');
    expect(llm.requests.slice(1).map((request) => request.nodeId)).toEqual(['1', '2']);
    expect(sink.events[0]).toMatchObject({ update_type: 'agent_start', strategy: 'example', options: { max_points: 2 } });
    const branchEvents = sink.events.filter((event) => event.type === 'agent_update' && ['agent_turn_start', 'agent_reason'].includes(event.update_type));
    expect(branchEvents.map((event) => [(event as { update_type: string }).update_type, event.node_id])).toEqual([
      ['agent_turn_start', '1'],
      ['agent_reason', '1'],
      ['agent_turn_start', '2'],
      ['agent_reason', '2'],
    ]);
  });

  it('applies option defaults and refuses unknown or bad options by name', () => {
    const { kernel } = inProcessKernel(new ScriptedLlmClient(), [exampleStrategy]);
    expect(kernel.checkOptions('example', undefined)).toEqual({ ok: true, options: { max_points: 3 } });
    expect(kernel.checkOptions('example', { max_pionts: 2 })).toMatchObject({ ok: false, message: expect.stringContaining('strategy_options.max_pionts') });
    expect(kernel.checkOptions('example', { max_points: 9 })).toMatchObject({ ok: false, message: expect.stringContaining('strategy_options.max_points') });
  });

  it('lists itself in the catalog with the JSON Schema of its options, defaults included', () => {
    const { kernel } = inProcessKernel(new ScriptedLlmClient(), [exampleStrategy]);
    expect(kernel.catalog()).toEqual([
      expect.objectContaining({
        name: 'example',
        label: 'Example: one branch per point',
        options_schema: expect.objectContaining({ properties: { max_points: expect.objectContaining({ type: 'integer', default: 3 }) } }),
      }),
    ]);
  });
});
