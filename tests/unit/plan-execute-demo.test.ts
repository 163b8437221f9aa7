import { configFromEnv, DemoLlmClient, planExecute } from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';

const demoModel = () => new DemoLlmClient(configFromEnv({ DEMO_DELAY_MS: '0' }), new Map([[planExecute.name, planExecute.demo]]));
const run = (question: string) => inProcessKernel(demoModel(), [planExecute]).start(question, { strategy: 'plan_execute', maxSteps: 10 });
const updates = (events: LoggedEventBody[], type: string) =>
  events.filter((event) => event.type === 'agent_update' && event.update_type === type) as Array<Record<string, unknown>>;

describe('the plan_execute demo model', () => {
  it('plans a chained calculation link by link with the calculator and answers with the true result', async () => {
    const { sink, outcome } = run('First compute 12*7, then add 15, then divide by 3');
    const done = await outcome;
    expect(done).toMatchObject({ status: 'completed' });
    const [plan] = updates(sink.events, 'agent_plan');
    expect((plan!.steps as unknown[]).length).toBeGreaterThanOrEqual(2);
    expect((plan!.steps as unknown[]).length).toBeLessThanOrEqual(4);
    const results = sink.events.filter((event) => event.type === 'tool_complete').map((event) => String((event as { result: unknown }).result));
    expect(results).toEqual(['84', '99', '33']);
    expect(done.status === 'completed' && done.answer).toMatch(/^`\(\(12\*7\) \+ 15\) \/ 3` = \*\*33\*\*\./);
    expect(updates(sink.events, 'agent_plan_step').filter((event) => event.status === 'done')).toHaveLength(3);
    expect(updates(sink.events, 'agent_run_metadata')[0]).toMatchObject({ summary: { succeeded: 3, failed: 0, success_rate: 1 } });
  });

  it('reads the clock in a plan of one step, one for the one part of the request', async () => {
    const { sink, outcome } = run('What time is it?');
    const done = await outcome;
    expect(done).toMatchObject({ status: 'completed' });
    expect(updates(sink.events, 'agent_plan')[0]).toMatchObject({ steps: [{ tools: ['current_time'] }] });
    expect(done.status === 'completed' && done.answer).toMatch(/^It is now \*\*/);
    expect(sink.events.some((event) => event.type === 'tool_complete' && event.tool_name === 'current_time')).toBe(true);
  });

  it('re-plans when a step needs a file the chat does not have, and says how to attach it', async () => {
    const { sink, outcome } = run('Summarize report.txt for me');
    const done = await outcome;
    expect(done).toMatchObject({ status: 'completed' });
    const [, revised, ...later] = updates(sink.events, 'agent_plan');
    expect(later).toEqual([]);
    expect(revised).toMatchObject({
      revision: 2,
      trigger: 'missing_prerequisite',
      steps: [
        { index: 1, status: 'done' },
        { index: 2, status: 'pending' },
      ],
    });
    expect(done.status === 'completed' && done.answer).toContain('Attach report.txt');
  });

  it('answers a request that needs no step directly', async () => {
    const { sink, outcome } = run('Who wrote Hamlet, do you know?');
    expect(await outcome).toMatchObject({ status: 'completed' });
    expect(updates(sink.events, 'agent_plan')[0]).toMatchObject({ steps: [{ goal: 'Say what I can do with this request', tools: [] }] });
  });
});
