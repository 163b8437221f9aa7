import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import {
  answerOf,
  block,
  NO_ATTACHMENT,
  findingsOf,
  type Next,
  notEnabledProblem,
  nextToolCall,
  pending,
  readSituation,
  shorten,
  type Situation,
  unavailable,
} from '../common/demo-language.ts';
import { spoken } from '../kernel/grounding.ts';

/** The demo model's answers to roa's calls, by purpose: it plans, calls one tool a step, observes. */
export async function roaDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  const situation = readSituation(request);
  switch (request.purpose) {
    case 'roa.reason':
      return demo.say(reasonReply(situation), request);
    case 'roa.act':
      await demo.pause(request.signal);
      return actReply(situation);
    case 'roa.observe':
      return demo.say(observeReply(situation), request);
    case 'roa.final':
      return demo.say(finalReply(situation), request);
    default:
      return demo.unknownPurpose(request);
  }
}

function reasonReply(situation: Situation): string {
  const next = pending(situation);
  const missing = unavailable(situation, next);
  if (missing) {
    const plan = `The ${spoken(missing)} tool is needed but not enabled for this run, so say so instead of trying.`;
    return `The user wrote: "${shorten(situation.question)}". ${plan}\n\n\`\`\`json\n${JSON.stringify({ plan, tools_to_consider: [], finish: true })}\n\`\`\``;
  }
  const link = situation.chain[situation.calculations.length];
  const plans: Record<Next, string> = {
    calculator:
      situation.calculations.length > 0 && link
        ? `The running value is ${situation.calculations.at(-1)}; next, ${link.words}: evaluate ${situation.expression} with the calculator.`
        : `Evaluate ${situation.expression} with the calculator.`,
    current_time: 'Read the current time from the clock.',
    read_file: `Read the file ${situation.file}.`,
    list_files: 'See which files this chat has.',
    write_file: `Write ${situation.write?.name}, once a person approves it.`,
    named: `Call ${situation.named?.name} as the user asked.`,
    request_input: 'The request is too vague to act on, so ask the user what exactly they need.',
  };
  const found = findingsOf(situation);
  const plan = next
    ? plans[next]
    : situation.noAttachment
      ? `${NO_ATTACHMENT}, so there is nothing to read: say so.`
      : found.answers.length + found.problems.length === 0
        ? 'Nothing in this is something the demo model can do: say so plainly, and what it can do.'
        : 'Everything needed is known, so answer directly.';
  const toolName = next === 'named' ? situation.named!.name : next;
  const intro =
    next || found.answers.length === 0
      ? `The user wrote: "${shorten(situation.question)}". ${plan}`
      : `I have what I need to answer "${shorten(situation.question)}".`;
  return `${intro}\n\n\`\`\`json\n${JSON.stringify({ plan, tools_to_consider: toolName ? [toolName] : [], finish: !next })}\n\`\`\``;
}

function actReply(situation: Situation): CompletionResult {
  const next = nextToolCall(situation);
  if (next.call) return { text: '', toolCalls: [next.call] };
  return { text: next.notEnabled ? `The ${spoken(next.notEnabled)} tool is not enabled for this run.` : 'No tool is needed.', toolCalls: [] };
}

function observeReply(situation: Situation): string {
  const { findings } = findingsOf(situation);
  if (situation.clarification !== undefined) findings.push(`The user clarified: "${shorten(situation.clarification)}".`);
  const unfinished = pending(situation);
  const missing = unavailable(situation, unfinished);
  if (missing) {
    const observation = `The ${spoken(missing)} tool is not enabled for this run.`;
    return block(observation, { observation, should_continue: false, final_answer: answerOf(situation, { problems: [notEnabledProblem(missing)] }) });
  }
  if (unfinished && unfinished !== 'request_input') {
    const link = situation.chain[situation.calculations.length];
    const next = unfinished === 'calculator' && link ? `Next, ${link.words}.` : `Next I need the ${unfinished} tool.`;
    const observation = `${findings.join(' ')} ${next}`.trim();
    return block(observation, { observation, should_continue: true, final_answer: '' });
  }
  const answer = answerOf(situation);
  const resolved = findingsOf(situation).problems.length === 0 && findings.length > 0;
  const observation = findings.join(' ') || 'Nothing here is something the demo model can do.';
  return block(`${observation} ${resolved ? 'That answers the request.' : 'The request cannot be answered from this.'}`, {
    observation,
    should_continue: false,
    final_answer: answer,
  });
}

/** At the step limit: the best answer from what was found, and what is missing. */
function finalReply(situation: Situation): string {
  const found = [...situation.results.entries()].filter(([, result]) => !result.startsWith('Error:'));
  const missing = pending(situation);
  const parts = found.length
    ? [`Here is what I found before running out of steps:`, ...found.map(([tool, result]) => `- ${tool}: ${shorten(result, 200)}`)]
    : ['I ran out of steps before finding anything useful.'];
  if (missing) parts.push(`Still missing: the ${missing} step. Continue the run or raise Max iterations to let me finish.`);
  return parts.join('\n');
}
