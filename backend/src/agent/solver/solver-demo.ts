import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import type { LlmMessage } from '../../messages.ts';
import {
  chainExpression,
  chainResult,
  fallbackAnswer,
  findingsOf,
  linkExpression,
  nextToolCall,
  notEnabledProblem,
  readSituation,
  shorten,
} from '../common/demo-language.ts';
import { unresolvedAnswer } from '../kernel/grounding.ts';
import { isSteerTurn } from '../kernel/steering.ts';

/**
 * The demo model's answers to the solver's stages. It proposes two approaches and picks the
 * calculator one, solves arithmetic word problems for real (the calculator does the sums, a chain
 * "12*7, then add 15, …" as one expression), and plants one flaw: the first loop's solution states
 * its result without checking it. The evaluator works the problem through itself and fails a
 * wrong answer or an unchecked one, so the orchestrator asks for one more loop (CONTINUE); the
 * second loop evaluates the problem again, step by step, and compares; the orchestrator answers
 * (FINAL) only what the evaluator confirmed, and says "checked" only then.
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
      return demo.say(
        'Approach 1 is the more reliable: the calculator does the arithmetic, so only the reading of the words can go wrong. Use it, and check the result.',
        request,
      );
    case 'solver.problem_solver': {
      await demo.pause(request.signal);
      const { situation, expression } = work;
      // Loop 1 evaluates the arithmetic as one expression; a later loop evaluates it again and then
      // works through it step by step (a chain of at most three steps) to compare.
      const calls = !expression
        ? []
        : loop === 1
          ? [expression]
          : [
              expression,
              ...(work.chain.length > 1 && work.chain.length <= 3
                ? work.chain.map((_, index) => linkExpression(work.chain, work.results.slice(1), index))
                : [expression]),
            ];
      if (work.results.length < calls.length && work.calculator) {
        const next = calls[work.results.length]!;
        return {
          text: '',
          toolCalls: [{ id: `call_demo_solver_${loop}_${work.results.length + 1}`, name: 'calculator', arguments: JSON.stringify({ expression: next }) }],
        };
      }
      // The request's other parts (the clock, a file, a tool it names), looked up as every strategy's demo does.
      const rest = { ...situation, expression: undefined, chain: [], calculations: [] };
      const other = nextToolCall(rest);
      if (other.call && other.next !== 'request_input') return { text: '', toolCalls: [{ ...other.call, id: `${other.call.id}_${loop}` }] };
      const lookedUp = findingsOf(rest);
      const found = lookedUp.answers;
      // What the tools could not do is said in the solution, so the evaluator and the orchestrator see it.
      const notDone = lookedUp.problems.map((sentence) => `\n\nNot done: ${sentence}`).join('');
      const also = found.length ? `\n\n${ALSO}\n\n${found.join('\n\n')}` : '';
      if (!expression) {
        if (lookedUp.problems.length) return demo.say(`${lookedUp.problems.join(' ')}${also}\n\nAnswer: none (${lookedUp.problems[0]})`, request);
        if (found.length) return demo.say(`The request needs no arithmetic; here is what it asks for.${also}\n\nAnswer: given above`, request);
        if (situation.ambiguous)
          return demo.say(`“${shorten(problem)}” does not say what to solve, and the demo model does not guess.\n\nAnswer: none (unclear request)`, request);
        return demo.say(
          `I can only solve arithmetic word problems and read files in the demo, and I found neither in “${shorten(problem)}”.\n\nAnswer: none (${NOTHING})`,
          request,
        );
      }
      if (!work.calculator)
        return demo.say(
          `The problem comes down to \`${expression}\`, but the calculator is not enabled, and the demo model does not do sums in its head.${also}\n\nAnswer: none (${notEnabledProblem('calculator')})`,
          request,
        );
      const result = work.results[0]!;
      if (result.startsWith('Error:')) {
        const failure = `The calculator could not evaluate ${expression}: ${result.replace(/^Error:\s*/, '').replace(/\.$/, '')}.`;
        return demo.say(`The problem comes down to \`${expression}\`. ${failure}${also}\n\nAnswer: none (${failure})`, request);
      }
      if (loop === 1)
        return demo.say(`The problem comes down to \`${expression}\`, which the calculator puts at ${result}.${also}${notDone}\n\nAnswer: ${result}`, request);
      const check = work.results.at(-1)!;
      const steps =
        work.results.length > 2
          ? ` Step by step: ${work.results
              .slice(1)
              .map((value, index) => `\`${calls[index + 1]}\` = ${value}`)
              .join(', ')}.`
          : '';
      return demo.say(
        check === result
          ? `The problem comes down to \`${expression}\` = ${result}. Evaluated again as a check it gives ${check}, the same.${steps}${also}${notDone}\n\nAnswer: ${result} (checked)`
          : `The problem comes down to \`${expression}\` = ${result}, but the check gives ${check}.${steps}${also}${notDone}\n\nAnswer: ${result}`,
        request,
      );
    }
    case 'solver.expert_evaluator': {
      const input = lastUser(request.messages);
      const answer = /Answer: ([^\n(]+)/.exec(input)?.[1]?.trim();
      // The evaluator computes the problem itself and compares: a wrong answer fails, whatever it claims.
      const expected = chainResult(work.chain);
      if (/Answer: none \(unclear request\)/.test(input)) return demo.say('The problem is unclear: only the person can say what they need.', request);
      const cannot = /^Answer: none \((.+)\)$/m.exec(input)?.[1];
      if (cannot) return demo.say(`There is no answer to call correct: ${cannot} No tool computed what the problem needs.`, request);
      const notDone = /^Not done: (.+)$/m.exec(input)?.[1];
      if (notDone) return demo.say(`Flaw: part of the request was not done, and no second loop can do it: ${notDone}`, request);
      if (expected === undefined || answer === undefined || answer === 'none' || answer === 'given above') {
        if (answer === 'given above')
          return demo.say('The solution is correct: what it gives comes from the tools’ results, and nothing in the problem needs computing.', request);
        return demo.say(
          answer === 'none' || answer === undefined
            ? 'There is no calculation to check: the solution says so itself.'
            : 'The solution is correct: nothing in the problem needs computing.',
          request,
        );
      }
      if (answer !== expected)
        return demo.say(`Flaw: the answer ${answer} is wrong; worked through, the problem comes to ${expected}. Solve it again, step by step.`, request);
      if (!/\(checked\)/.test(input))
        return demo.say(
          `Flaw: the answer ${answer} is right, but it was stated without any check. Evaluate it a second time (or another way) and compare before answering.`,
          request,
        );
      return demo.say(`The solution is correct: I worked the problem through to ${expected}, and the solver's own check agrees.`, request);
    }
    case 'solver.orchestrator': {
      const input = String(request.variables?.input ?? lastUser(request.messages));
      const flawed = /Flaw:/.test(input);
      const unclear = /Answer: none \(unclear request\)/.test(input);
      const answer = /Answer: ([^\n]+)/.exec(input)?.[1]?.replace(' (checked)', '').trim() ?? '';
      const checked = /\(checked\)/.test(input) && /The solution is correct: I worked/.test(input);
      const also = new RegExp(`${ALSO}\\n\\n([\\s\\S]*?)\\n\\n(?:Not done:|Answer:)`).exec(input)?.[1]?.trim();
      // What no tool could do: the answer says so first, and the run does not end as a success.
      const cannot = (unclear ? undefined : /^Answer: none \((.+)\)$/m.exec(input)?.[1]) ?? /^Not done: (.+)$/m.exec(input)?.[1];
      const computed =
        answer && !answer.startsWith('none') && answer !== 'given above' && work.expression
          ? `**${answer}**: \`${work.expression}\` = ${answer}${checked ? ', computed with the calculator, checked again and confirmed by the evaluator' : ''}.`
          : undefined;
      const finalAnswer =
        [computed, also].filter(Boolean).join('\n\n') ||
        'The demo model computed no answer: it found no calculation it understands in the problem, or the calculator is not enabled.';
      const unresolved =
        cannot === NOTHING ? fallbackAnswer(work.situation) : cannot ? unresolvedAnswer(cannot, [computed, also].filter(Boolean).join('\n\n')) : undefined;
      const decision = unresolved
        ? {
            action: 'FINAL',
            rationale: `No tool gave what the request needs: ${cannot}`,
            final_answer: unresolved,
            question_for_user: '',
            next_focus: '',
          }
        : unclear
          ? {
              action: 'ASK_USER',
              rationale: 'The request does not say what to solve; only the person can.',
              final_answer: '',
              question_for_user: clarifyingQuestion(problem),
              next_focus: 'solve what the person asks for',
            }
          : flawed
            ? {
                action: 'CONTINUE',
                rationale: 'The evaluator found a flaw.',
                final_answer: '',
                question_for_user: '',
                next_focus: 'solve it again and check the result',
              }
            : {
                action: 'FINAL',
                rationale: checked
                  ? 'The solution is correct and checked.'
                  : computed
                    ? 'The solution is correct.'
                    : also
                      ? 'The tools gave what was asked.'
                      : 'There was nothing to compute.',
                final_answer: finalAnswer,
                question_for_user: '',
                next_focus: '',
              };
      return { text: JSON.stringify(decision), toolCalls: [], parsed: decision };
    }
    default:
      return demo.unknownPurpose(request);
  }
}

/** Why a solution has no answer when the problem holds nothing the demo model can do. */
const NOTHING = 'The offline demo model found nothing it can do in this request.';

/** The heading of a solution's parts that are not arithmetic (the time, a file's summary). */
const ALSO = 'Also asked for:';

/**
 * The problem as the demo reads it (with the person's answers to ASK_USER, which reach the solver
 * as "The user answered: …"), its arithmetic, and the calculator results of this stage so far.
 */
function workOf(request: CompletionRequest, problem: string) {
  const answers = [...lastUser(request.messages).matchAll(/^The user answered: (.+)$/gm)].map((match) => match[1]!);
  const question = [problem, ...answers].join('\n');
  const messages: LlmMessage[] = [
    { role: 'user', content: question },
    ...request.messages.filter((message) => message.role === 'assistant' || message.role === 'tool'),
  ];
  const situation = readSituation({ ...request, messages });
  return {
    situation,
    expression: chainExpression(situation.chain),
    chain: situation.chain,
    results: situation.calculations,
    calculator: situation.offered.has('calculator'),
  };
}

/** The question the demo asks of a request too vague to act on (the same words as every strategy's). */
function clarifyingQuestion(problem: string): string {
  return `Could you tell me a bit more about what you need with "${shorten(problem)}"? For example, a calculation I should do.`;
}

function lastUser(messages: LlmMessage[]): string {
  const message = messages.findLast((candidate) => candidate.role === 'user' && !isSteerTurn(candidate.content));
  return message?.role === 'user' ? message.content : '';
}
