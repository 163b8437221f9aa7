import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import type { LlmMessage } from '../../messages.ts';
import { readSituation, shorten } from '../demo-language.ts';

/**
 * The demo model's answers to the solver's stages. It proposes two approaches and picks the
 * calculator one, solves arithmetic word problems for real (the calculator does the sums), and
 * plants one flaw: the first loop's solution states its result without checking it, which the
 * evaluator finds, so the orchestrator asks for one more loop (CONTINUE, focus: check the result);
 * the second loop computes the result again and compares, and the orchestrator answers (FINAL).
 */
export async function solverDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  const problem = String(request.variables?.problem ?? '');
  const loop = Number(request.variables?.loop ?? 1);
  const work = workOf(request, problem);
  switch (request.purpose) {
    case 'solver.approach_proposer':
      return demo.say(
        [
          `Approaches for “${shorten(problem)}”:`,
          '',
          '1. **Compute it with the calculator**: turn the words into one arithmetic expression and evaluate it. Risk: misreading the words.',
          '2. **Estimate, then refine**: round the numbers, estimate, then correct. Risk: the correction is done in the head and goes wrong.',
        ].join('\n'),
        request,
      );
    case 'solver.approach_evaluator':
      return demo.say('Approach 1 is the more reliable: the calculator does the arithmetic, so only the reading of the words can go wrong. Use it, and check the result.', request);
    case 'solver.problem_solver': {
      await demo.pause(request.signal);
      if (!work.expression) {
        return { text: `I can only solve arithmetic word problems in the demo, and I found no calculation in “${shorten(problem)}”.\n\nAnswer: none`, toolCalls: [] };
      }
      const wanted = loop === 1 ? 1 : 2;
      if (work.results.length < wanted && work.calculator) {
        return { text: '', toolCalls: [{ id: `call_demo_solver_${loop}_${work.results.length + 1}`, name: 'calculator', arguments: JSON.stringify({ expression: work.expression }) }] };
      }
      const result = work.results.at(-1) ?? '(the calculator is not enabled)';
      if (loop === 1) return demo.say(`The problem comes down to \`${work.expression}\`, which the calculator puts at ${result}.\n\nAnswer: ${result}`, request);
      const agree = work.results.length >= 2 && work.results.at(-1) === work.results.at(-2);
      return demo.say(
        `The problem comes down to \`${work.expression}\`. The calculator gave ${work.results[0]}; evaluated again as a check it gives ${result}${agree ? ', the same' : ''}.\n\nAnswer: ${result} (checked)`,
        request,
      );
    }
    case 'solver.expert_evaluator': {
      const input = lastUser(request.messages);
      if (/\(checked\)/.test(input) || !/`[^`]+`/.test(input)) return demo.say('The solution is correct: the expression matches the words and the result was checked.', request);
      return demo.say('Flaw: the result was stated without any check. Evaluate the expression a second time (or another way) and compare before answering.', request);
    }
    case 'solver.orchestrator': {
      const input = String(request.variables?.input ?? lastUser(request.messages));
      const flawed = /Flaw:/.test(input);
      const answer = /Answer: ([^\n]+)/.exec(input)?.[1]?.replace(' (checked)', '') ?? '';
      const decision = flawed
        ? { action: 'CONTINUE', rationale: 'The evaluator found the result unchecked.', final_answer: '', question_for_user: '', next_focus: 'check the result by evaluating it again' }
        : {
            action: 'FINAL',
            rationale: 'The solution is correct and checked.',
            final_answer: answer && answer !== 'none' ? `**${answer}**: ${shorten(problem, 120)} comes to ${answer}, checked twice with the calculator.` : 'The demo model found no calculation to do in this problem.',
            question_for_user: '',
            next_focus: '',
          };
      return { text: JSON.stringify(decision), toolCalls: [], parsed: decision };
    }
    default:
      return demo.unknownPurpose(request);
  }
}

/** The problem's arithmetic and the calculator results of this stage so far. */
function workOf(request: CompletionRequest, problem: string) {
  const messages: LlmMessage[] = [{ role: 'user', content: problem }, ...request.messages.filter((message) => message.role === 'assistant' || message.role === 'tool')];
  const situation = readSituation({ ...request, messages });
  const expression = situation.chain[0]?.expression;
  return { expression, results: situation.calculations, calculator: situation.offered.has('calculator') };
}

function lastUser(messages: LlmMessage[]): string {
  const message = messages.findLast((candidate) => candidate.role === 'user');
  return message?.role === 'user' ? message.content : '';
}
