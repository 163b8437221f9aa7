import { observeText, reasonText, type ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';

/**
 * Scripts a reason–act–observe run that has the calculator compute 6*7 and answers 42: the act
 * call (which asks for the calculator) reports 100 prompt and 20 completion tokens, the other
 * calls the scripted server's default usage.
 */
export function scriptCalculatorRun(llm: ScriptedLlmServer): void {
  llm.respond((request) => {
    if (request.phase === 'act') {
      const done = request.body.messages.some((message) => message.role === 'tool');
      return done
        ? { text: 'No more tools.' }
        : { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }], usage: { prompt_tokens: 100, completion_tokens: 20 } };
    }
    if (request.phase === 'observe') return { text: observeText('It is 42.', { should_continue: false, final_answer: '42' }) };
    return { text: reasonText('Use the calculator.') };
  });
}

/**
 * Scripts a run whose first act call hangs (until the instance running it goes away); the act
 * call asked again has the calculator compute 6*7, and the run answers 42.
 */
export function scriptFirstActHanging(llm: ScriptedLlmServer): void {
  let acts = 0;
  llm.respond((request) => {
    if (request.phase === 'act') return ++acts === 1 ? { hang: true } : { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
    if (request.phase === 'observe') return { text: observeText('6*7 = 42.', { observation: '42', should_continue: false, final_answer: 'It is 42.' }) };
    return { text: reasonText('Use the calculator.') };
  });
}

/**
 * A model's replies for a step that has the calculator compute 6*7 (call c1) and asks the person
 * "Which colour?" (call ask) at once: a run that waits on its question with a call completed.
 */
export function computeThenAsk(): ScriptedReply[] {
  return [
    { text: reasonText('Compute, then ask.') },
    {
      toolCalls: [
        { id: 'c1', name: 'calculator', arguments: { expression: '6*7' } },
        { id: 'ask', name: 'request_input', arguments: { question: 'Which colour?' } },
      ],
    },
  ];
}
