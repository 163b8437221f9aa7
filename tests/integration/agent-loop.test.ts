import { describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize, answeredInOneStep, stepOf } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise({ AGENT_MAX_STEPS_LIMIT: '5' }, { eachTest: true });

describe('the reason–act–observe loop', () => {
  it('runs reason, act and observe in order and streams every phase', async () => {
    stepwise.llm.enqueue(
      { text: reasonText('I will multiply with the calculator.', { tools_to_consider: ['calculator'] }) },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '(17+25)*3' } }] },
      { text: observeText('The product is 126.', { should_continue: false, final_answer: 'It is **126**.' }) },
    );
    stepwise.client.chat('What is (17+25)*3?', { agent_mode: true, agent_max_steps: 3 });
    const events = await stepwise.client.untilComplete();

    expect(summarize(events)).toEqual(answeredInOneStep('calculator'));
    expect(stepwise.llm.phases()).toEqual(['reason', 'act', 'observe']);
    const byKind = (kind: string) => events.find((event) => (event.update_type ?? event.type) === kind)!;
    expect(byKind('agent_start').max_steps).toBe(3);
    expect(byKind('agent_reason').content).toBe('I will multiply with the calculator.');
    expect(byKind('tool_start').arguments).toEqual({ expression: '(17+25)*3' });
    expect(byKind('tool_complete').result).toBe(126);
    expect(byKind('assistant_message').content).toBe('It is **126**.');
    expect(byKind('agent_completion').steps).toBe(1);
    expect(events.some((event) => event.update_type === 'agent_reason_delta')).toBe(true);
  });

  it('stamps every logged event with a gapless seq, an ISO time and the run id', async () => {
    stepwise.llm.enqueue({ text: reasonText('Plan.') }, { text: 'No tool needed.' }, { text: observeText('Done.', { final_answer: 'Done.' }) });
    stepwise.client.chat('Say done', { agent_mode: true });
    await stepwise.client.untilComplete();
    const logged = stepwise.client.logged;
    expect(logged.map((event) => event.seq)).toEqual(logged.map((_, index) => index + 1));
    for (const event of logged) {
      expect(new Date(String(event.ts)).toISOString()).toBe(event.ts);
      expect(event.run_id).toBe(logged[0]!.run_id);
    }
    expect(
      stepwise.client.events.filter((event) => event.type.endsWith('delta') || String(event.update_type).endsWith('delta')).every((event) => !('seq' in event)),
    ).toBe(true);
  });

  it('offers the enabled tools and request_input in act, and no tools in reason or observe', async () => {
    stepwise.llm.enqueue({ text: reasonText('Plan.') }, { text: 'Nothing to call.' }, { text: observeText('Done.', { final_answer: 'ok' }) });
    stepwise.client.chat('Hello there agent', { agent_mode: true, tools: ['calculator'] });
    await stepwise.client.untilComplete();
    const [reason, act, observe] = stepwise.llm.requests;
    expect(reason!.toolNames).toEqual([]);
    expect(act!.toolNames).toEqual(['calculator', 'request_input']);
    expect(observe!.toolNames).toEqual([]);
  });

  it('skips the act call when reason says finish', async () => {
    stepwise.llm.enqueue({ text: reasonText('I already know this.', { finish: true }) }, { text: observeText('Known.', { final_answer: 'Paris.' }) });
    stepwise.client.chat('Capital of France?', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    expect(stepwise.llm.phases()).toEqual(['reason', 'observe']);
    expect(summarize(events)).toEqual(answeredInOneStep());
  });

  it('runs independent tool calls of one act phase in parallel and returns results in call order', async () => {
    stepwise.llm.enqueue(
      ...answerAfter(
        'Two sums.',
        [
          { id: 'call_a', name: 'calculator', arguments: { expression: '1+1' } },
          { id: 'call_b', name: 'calculator', arguments: { expression: '2*21' } },
        ],
        'Both done.',
        '2 and 42',
      ),
    );
    stepwise.client.chat('Compute 1+1 and 2*21', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    const completes = events.filter((event) => event.type === 'tool_complete');
    expect(completes.map((event) => [event.tool_call_id, event.result]).sort()).toEqual([
      ['call_a', 2],
      ['call_b', 42],
    ]);
    const observe = stepwise.llm.requests[2]!.body.messages;
    const toolMessages = observe.filter((message) => message.role === 'tool');
    expect(toolMessages.map((message) => [message.tool_call_id, message.content])).toEqual([
      ['call_a', '2'],
      ['call_b', '42'],
    ]);
    expect(observe.find((message) => message.role === 'system')!.content).toContain('calculator({"expression":"2*21"}) → 42');
  });

  it('reports invalid tool arguments and unknown tools to the model as tool errors and goes on', async () => {
    stepwise.llm.enqueue(
      { text: reasonText('Try tools.') },
      {
        toolCalls: [
          { id: 'bad_json', name: 'calculator', arguments: '{"expression": ' },
          { id: 'bad_type', name: 'calculator', arguments: { expression: 42 } },
          { id: 'bad_math', name: 'calculator', arguments: { expression: '2+*3' } },
          { id: 'unknown', name: 'rm_rf', arguments: {} },
        ],
      },
      { text: observeText('All failed.', { final_answer: 'Sorry.' }) },
    );
    stepwise.client.chat('Break things', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    const errors = Object.fromEntries(events.filter((event) => event.type === 'tool_error').map((event) => [event.tool_call_id, event.error]));
    expect(errors.bad_json).toMatch(/not valid JSON/);
    expect(errors.bad_type).toMatch(/Invalid arguments for calculator: expression/);
    expect(errors.bad_math).toMatch(/Unexpected/);
    expect(errors.unknown).toMatch(/Unknown tool "rm_rf"/);
    const toolMessages = stepwise.llm.requests[2]!.body.messages.filter((message) => message.role === 'tool');
    expect(toolMessages).toHaveLength(4);
    expect(toolMessages.every((message) => String(message.content).startsWith('Error:'))).toBe(true);
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
  });

  it('ends at max steps with one last call for the best answer from what was found', async () => {
    stepwise.llm.respond((request) =>
      request.phase === 'observe'
        ? { text: observeText(`Progress after request ${request.index}.`, { should_continue: true }) }
        : request.phase === 'reason'
          ? { text: reasonText('Keep going.') }
          : request.phase === 'final'
            ? { text: 'Best answer from what was found; still missing: the last part.' }
            : { text: 'No tool.' },
    );
    stepwise.client.chat('Never finish', { agent_mode: true, agent_max_steps: 2 });
    const events = await stepwise.client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', ...stepOf(1), ...stepOf(2), 'assistant_message', 'agent_completion:max_steps', 'response_complete']);
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Best answer from what was found; still missing: the last part.');
    expect(events.find((event) => event.update_type === 'agent_completion')!.steps).toBe(2);
    expect(stepwise.llm.phases().slice(-2)).toEqual(['observe', 'final']);
    expect(stepwise.llm.requests.at(-2)!.body.messages[0]!.content).toContain('This is the last step');
    // The last call sees what the last step concluded, and offers no tools.
    expect(stepwise.llm.requests.at(-1)!.body.messages[0]!.content).toContain('Progress after request 5.');
    expect(stepwise.llm.requests.at(-1)!.body.tools).toBeUndefined();
  });

  it('clamps agent_max_steps to the stepwise.server limit', async () => {
    stepwise.llm.respond((request) => ({ text: request.phase === 'observe' ? observeText('More.') : reasonText('Go.') }));
    stepwise.client.chat('Loop', { agent_mode: true, agent_max_steps: 1000 });
    const events = await stepwise.client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_start')!.max_steps).toBe(5);
    expect(events.filter((event) => event.update_type === 'agent_turn_start')).toHaveLength(5);
  });

  it('treats missing or malformed control blocks as free text and keeps going', async () => {
    stepwise.llm.enqueue(
      { text: 'Thinking without a block {"plan": "broken' },
      { text: 'No tool.' },
      { text: 'Observed, block malformed: ```json\n{"should_continue": "maybe", \n```' },
      { text: reasonText('Second try.') },
      { text: 'No tool.' },
      { text: observeText('Now done.', { final_answer: 'Finished on step 2.' }) },
    );
    stepwise.client.chat('Go', { agent_mode: true, agent_max_steps: 3 });
    const events = await stepwise.client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_reason')!.content).toBe('Thinking without a block {"plan": "broken');
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('Finished on step 2.');
    expect(events.find((event) => event.update_type === 'agent_completion')!.steps).toBe(2);
  });

  it('works against an endpoint used without streaming', async () => {
    const { llm, client } = await stepwise.start({ LLM_STREAMING: 'false' }, stepwise.llm);
    llm.enqueue(...answerAfter('Use the calculator.', [{ name: 'calculator', arguments: { expression: '6*7' } }], '42.', '42'));
    client.chat('6*7?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(llm.requests.every((request) => request.body.stream !== true)).toBe(true);
    expect(events.find((event) => event.type === 'tool_complete')!.result).toBe(42);
    expect(events.find((event) => event.type === 'assistant_message')!.content).toBe('42');
  });

  it('continues the conversation: the next run sees the previous question, steps and answer', async () => {
    stepwise.llm.enqueue(
      { text: reasonText('Compute.') },
      { toolCalls: [{ id: 'first', name: 'calculator', arguments: { expression: '2+2' } }] },
      { text: observeText('Four.', { final_answer: 'Four.' }) },
      { text: reasonText('Recall.', { finish: true }) },
      { text: observeText('It was four.', { final_answer: 'It was 4.' }) },
    );
    stepwise.client.chat('What is 2+2?', { agent_mode: true });
    await stepwise.client.untilComplete();
    const from = stepwise.client.events.length;
    stepwise.client.chat('What was the answer again?', { agent_mode: true });
    await stepwise.client.untilComplete({ from });
    const messages = stepwise.llm.requests[3]!.body.messages;
    const roles = messages.map((message) => message.role);
    expect(messages[1]).toMatchObject({ role: 'user', content: 'What is 2+2?' });
    expect(roles).toContain('tool');
    expect(messages.some((message) => message.role === 'assistant' && message.content === 'Four.')).toBe(true);
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'What was the answer again?' });
  });
});
