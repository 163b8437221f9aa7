import { describe, expect, it } from 'vitest';
import { observeText, reasonText, type RecordedRequest } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise({}, { eachTest: true });

/**
 * What an OpenAI-compatible endpoint checks of a request's messages: tool call ids are unique, and
 * every call of an assistant message is answered exactly once by the tool messages after it.
 */
function toolCallProblems(request: RecordedRequest): string[] {
  const problems: string[] = [];
  const messages = request.body.messages;
  messages.forEach((message, index) => {
    const ids = ((message.tool_calls ?? []) as { id: string }[]).map((call) => call.id);
    if (ids.length === 0) return;
    if (new Set(ids).size !== ids.length) problems.push(`message ${index} repeats a tool call id: ${ids.join(', ')}`);
    const answers: string[] = [];
    for (const next of messages.slice(index + 1)) {
      if (next.role !== 'tool') break;
      answers.push(String(next.tool_call_id));
    }
    if ([...answers].sort().join() !== [...ids].sort().join()) {
      problems.push(`message ${index} calls ${ids.join(', ')} but is answered by ${answers.join(', ')}`);
    }
  });
  return problems;
}

describe('tool calls that share an id in one model reply', () => {
  it('are each run and answered, under ids of their own, so the next request stays valid', async () => {
    stepwise.llm.enqueue(
      { text: reasonText('Compute both.') },
      {
        toolCalls: [
          { id: 'call_same', name: 'calculator', arguments: { expression: '1+1' } },
          { id: 'call_same', name: 'calculator', arguments: { expression: '2+2' } },
          { id: 'call_same_2', name: 'calculator', arguments: { expression: '3+3' } },
        ],
      },
      { text: observeText('2, 4 and 6.', { final_answer: '2, 4 and 6.' }) },
      { text: 'Yes.' },
    );
    stepwise.client.chat('Compute 1+1, 2+2 and 3+3', { agent_mode: true });
    const events = await stepwise.client.untilComplete();
    // The calls run in parallel, so their events interleave in any order.
    expect(
      summarize(events)
        .filter((kind) => kind.startsWith('tool_'))
        .sort(),
    ).toEqual([
      'tool_complete:calculator',
      'tool_complete:calculator',
      'tool_complete:calculator',
      'tool_start:calculator',
      'tool_start:calculator',
      'tool_start:calculator',
    ]);
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    const results = Object.fromEntries(events.filter((event) => event.type === 'tool_complete').map((event) => [event.tool_call_id, String(event.result)]));
    expect(results).toEqual({ call_same: '2', call_same_3: '4', call_same_2: '6' });

    const observe = stepwise.llm.requests.find((request) => request.phase === 'observe')!;
    expect(toolCallProblems(observe)).toEqual([]);
    expect(observe.body.messages.filter((message) => message.role === 'tool').map((message) => [message.tool_call_id, message.content])).toEqual([
      ['call_same', '2'],
      ['call_same_3', '4'],
      ['call_same_2', '6'],
    ]);

    // The run's calls join the history: the next message's request is valid too.
    const from = stepwise.client.events.length;
    stepwise.client.chat('Sure?');
    await stepwise.client.untilComplete({ from });
    expect(toolCallProblems(stepwise.llm.requests.at(-1)!)).toEqual([]);
  });
});
