import { roa } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { inProcessKernel } from '../helpers/kernel.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';
import { answeredInOneStep } from '../helpers/ws-client.ts';

/** A model that plans, calls the calculator once, then answers. */
const oneToolStep = () =>
  new ScriptedLlmClient((request) => {
    if (request.purpose === 'roa.reason') return { text: reasonText('Use the calculator.') };
    if (request.purpose === 'roa.act') return { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
    return { text: observeText('6*7 is 42.', { final_answer: '**42**', should_continue: false }) };
  });

describe('the roa strategy', () => {
  it('runs reason, act and observe in order, each call with its purpose, and ends with the answer', async () => {
    const llm = oneToolStep();
    const { sink, outcome } = inProcessKernel(llm, [roa]).start('What is 6*7?');
    expect(await outcome).toMatchObject({ status: 'completed', answer: '**42**', steps: 1 });
    expect(llm.purposes()).toEqual(['roa.reason', 'roa.act', 'roa.observe']);
    expect(sink.summary()).toEqual(answeredInOneStep('calculator'));
    expect(String((sink.events.find((event) => event.type === 'tool_complete') as { result: unknown }).result)).toBe('42');
  });

  it('carries the run id on every model request and the strategy with its options on agent_start', async () => {
    const llm = oneToolStep();
    const { sink, outcome, input } = inProcessKernel(llm, [roa]).start('What is 6*7?');
    await outcome;
    expect(llm.requests.map((request) => request.runId)).toEqual([input.runId, input.runId, input.runId]);
    expect(sink.events[0]).toMatchObject({ update_type: 'agent_start', strategy: 'roa', options: {}, run_id: input.runId });
  });

  it('skips the act call when reason says finish', async () => {
    const llm = new ScriptedLlmClient((request) =>
      request.purpose === 'roa.reason'
        ? { text: reasonText('I know this.', { finish: true }) }
        : { text: observeText('Known.', { final_answer: 'Paris', should_continue: false }) },
    );
    const { outcome } = inProcessKernel(llm, [roa]).start('Capital of France?');
    expect(await outcome).toMatchObject({ status: 'completed', answer: 'Paris' });
    expect(llm.purposes()).toEqual(['roa.reason', 'roa.observe']);
  });

  it('at max steps makes one last call for the best answer, which becomes the answer', async () => {
    const llm = new ScriptedLlmClient((request) => {
      if (request.purpose === 'roa.reason') return { text: reasonText('Keep going.') };
      if (request.purpose === 'roa.act') return { text: 'No tool.' };
      if (request.purpose === 'roa.observe') return { text: observeText('Half way.', { should_continue: true }) };
      return { text: 'The best I have: half of it. Missing: the rest.' };
    });
    const { sink, outcome } = inProcessKernel(llm, [roa]).start('Something long', { maxSteps: 2 });
    expect(await outcome).toMatchObject({ status: 'completed', answer: 'The best I have: half of it. Missing: the rest.', steps: 2 });
    expect(llm.purposes()).toEqual(['roa.reason', 'roa.act', 'roa.observe', 'roa.reason', 'roa.act', 'roa.observe', 'roa.final']);
    expect(sink.summary().slice(-3)).toEqual(['assistant_message', 'agent_completion:max_steps', 'response_complete']);
    expect(llm.requests.at(-1)!.tools).toBeUndefined();
  });

  it('treats a malformed control block as free text and keeps going, never showing the JSON', async () => {
    const llm = new ScriptedLlmClient((request, index) => {
      if (request.purpose === 'roa.reason') return { text: 'Plan: look around.\n\n```json\n{"plan": "look", "finish": fals\n```' };
      if (request.purpose === 'roa.act') return { text: '' };
      return index < 5 ? { text: 'Still unsure. {not json' } : { text: observeText('Done.', { final_answer: 'Found it.' }) };
    });
    const { sink, outcome } = inProcessKernel(llm, [roa]).start('Find it', { maxSteps: 3 });
    expect(await outcome).toMatchObject({ status: 'completed', answer: 'Found it.', steps: 2 });
    const observed = sink.events.filter((event) => event.type === 'agent_update' && event.update_type === 'agent_observe');
    expect(observed[0]).toMatchObject({ content: 'Still unsure. {not json' });
    const reasoned = sink.events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_reason');
    expect(reasoned).toMatchObject({ step: 1 });
  });

  it('stops mid-phase: the in-flight call is aborted, agent_stopped is the one ending', async () => {
    const llm = new ScriptedLlmClient((request) => (request.purpose === 'roa.reason' ? { hang: true } : { text: '' }));
    const { sink, control, outcome } = inProcessKernel(llm, [roa]).start('Think forever');
    await llm.untilCalls(1);
    control.stop('user');
    expect(await outcome).toMatchObject({ status: 'stopped', reason: 'user', steps: 1 });
    expect(llm.requests[0]!.signal.aborted).toBe(true);
    expect(sink.summary()).toEqual(['agent_start', 'agent_turn_start:1', 'agent_stopped:1', 'response_complete']);
  });

  it('ends with agent_error when the model fails, and says why', async () => {
    const { ModelError } = await import('@stepwise/backend');
    const llm = new ScriptedLlmClient(() => ({ error: new ModelError('The model endpoint answered 503: the model server failed') }));
    const { sink, outcome } = inProcessKernel(llm, [roa]).start('Anything');
    expect(await outcome).toMatchObject({ status: 'failed' });
    expect(sink.events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_error')).toMatchObject({
      message: 'The model endpoint answered 503: the model server failed',
    });
  });
});
