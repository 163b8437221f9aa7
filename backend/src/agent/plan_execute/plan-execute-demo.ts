import type { CompletionRequest, CompletionResult, DemoKit, LlmToolCall } from '../../llm/llm-client.ts';
import { block, fallbackAnswer, NO_ATTACHMENT, readSituation, requestParts, type Situation, shorten, summarize } from '../common/demo-language.ts';
import { spoken, unresolvedAnswer } from '../kernel/grounding.ts';
import type { PlanReply } from './plan.ts';

type DemoStep = PlanReply['steps'][number];

/**
 * The demo model's answers to plan_execute's calls, by purpose. Its plans say what each step does
 * in the step's context ("Use TOOL on: ARGUMENT"), which the executor's calls get back as a
 * variable, so the demo never reads prompt wording.
 */
export async function planExecuteDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  const variables = request.variables ?? {};
  switch (request.purpose) {
    case 'plan_execute.plan':
      return data({ steps: firstPlan(request) });
    case 'plan_execute.replan':
      return data({ steps: replan(request) });
    case 'plan_execute.viability':
      // The plan was made before the person said what they need: once they have, it no longer fits.
      return /^The user answered: /.test(text(variables.observation))
        ? data({ viable: false, confidence: 0.95, reason: 'The plan was made before the user said what they need; plan what they asked for.' })
        : data({ viable: true, confidence: 0.9, reason: 'The remaining steps still fit the request.' });
    case 'plan_execute.reason':
      return demo.say(reasonReply(text(variables.context), text(variables.goal)), request);
    case 'plan_execute.act':
      await demo.pause(request.signal);
      return actReply(request, text(variables.context));
    case 'plan_execute.observe':
      return demo.say(observeReply(request, text(variables.context), text(variables.goal)), request);
    case 'plan_execute.synthesis':
      return demo.say(synthesisReply(request), request);
    default:
      return demo.unknownPurpose(request);
  }
}

function data(parsed: unknown): CompletionResult {
  return { text: JSON.stringify(parsed), toolCalls: [], parsed };
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function toolNames(request: CompletionRequest): string[] {
  const names = request.variables?.tool_names;
  return Array.isArray(names) ? names.filter((name): name is string => typeof name === 'string') : [];
}

const step = (goal: string, tool: string | undefined, argument: string, success: string): DemoStep => ({
  goal,
  primary_tools: tool ? [tool] : [],
  success_criteria: success,
  context: tool ? `Use ${tool}${argument ? ` on: ${argument}` : ''}` : argument,
});

/**
 * A step for each part of the request (the shared demo brain's parts): every link of a
 * calculation, the time, a file, a file that is missing. A vague request gets a question first,
 * and a plan for the answer once the person gave it (a re-plan).
 */
function firstPlan(request: CompletionRequest): DemoStep[] {
  const steps = stepsFor(readSituation(request), new Set(toolNames(request)));
  // A plan has a step at least: a request the demo finds nothing to do in gets one that says what it can do.
  return steps.length ? steps : [step(SAY_WHAT_I_CAN, undefined, 'No tool: say what the demo model can do', 'The user knows what to ask.')];
}

/** The goal of the one step of a request the demo finds nothing to do in; its synthesis says what the demo can do. */
const SAY_WHAT_I_CAN = 'Say what I can do with this request';

function stepsFor(situation: Situation, tools: Set<string>): DemoStep[] {
  const steps: DemoStep[] = [];
  let running = '';
  for (const part of requestParts(situation)) {
    if (part.kind === 'calculator') {
      const link = situation.chain[steps.length];
      running = situation.chain.length > 1 && link ? (link.expression ?? `(${running}) ${link.operator} ${link.operand}`) : situation.expression!;
      if (tools.has('calculator')) steps.push(step(`Compute ${running}`, 'calculator', running, 'The calculator returns a number.'));
    } else if (part.kind === 'current_time' && tools.has('current_time')) {
      steps.push(step('Read the current time', 'current_time', '', 'The clock gives the time.'));
    } else if (part.kind === 'read_file') {
      steps.push(step(`Read ${situation.file}`, 'read_file', situation.file!, 'The file is read and summarized.'));
    } else if (part.kind === 'write_file' && situation.write && tools.has('write_file')) {
      steps.push(step(`Write ${situation.write.name}`, 'write_file', JSON.stringify(situation.write), 'The file is written.'));
    } else if (part.kind === 'missing_file' && situation.missingFile) {
      steps.push(step(`Find ${situation.missingFile} among the chat's files`, undefined, `Needs file: ${situation.missingFile}`, 'The file is there.'));
      steps.push(step(`Summarize ${situation.missingFile}`, undefined, `Summarize file: ${situation.missingFile}`, 'A summary is written.'));
    } else if (part.kind === 'missing_file') {
      steps.push(step('Look for the file attached to the chat', undefined, 'Needs an attached file', 'A file is attached.'));
    }
  }
  if (steps.length === 0 && situation.ambiguous && situation.clarification === undefined) {
    steps.push(step('Ask what the user needs', 'request_input', clarifyingQuestion(situation.question), 'The user says what they need.'));
    steps.push(step('Do what the user asks', undefined, 'Do what the user asks', 'The request is answered.'));
  }
  return steps;
}

/**
 * A re-plan: after a step found a file missing, tell the user how to attach it (instead of
 * summarizing nothing); after the person answered the question, a step for each part of what they asked.
 */
function replan(request: CompletionRequest): DemoStep[] {
  const variables = request.variables ?? {};
  const answered = /The user answered: (.+)/.exec(text(variables.observations))?.[1];
  if (variables.trigger === 'not_viable' && answered) {
    const situation = readSituation({ ...request, messages: [{ role: 'user', content: `${text(variables.question)}\n${answered}` }] });
    return stepsFor(situation, new Set(toolNames(request)));
  }
  const missing = readSituation(request).missingFile;
  if (missing) return [step(`Tell the user how to attach ${missing}`, undefined, `Explain missing file: ${missing}`, 'The user knows what to do.')];
  // A step failed (a tool's error, a tool not enabled): nothing later can rest on it, so the rest of the plan is to say so.
  return [step('Tell the user what could not be done', undefined, 'Explain what could not be done', 'The user knows what failed and why.')];
}

/** The question the demo asks of a vague request (the same words as every strategy's). */
function clarifyingQuestion(question: string): string {
  return `Could you tell me a bit more about what you need with "${shorten(question)}"? For example, a calculation I should do.`;
}

/** The built-in tools as a plan says them. */
const TOOL_PHRASES: Record<string, string> = {
  calculator: 'the calculator',
  current_time: 'the clock',
  read_file: 'the file reader',
  list_files: 'the list of files',
  request_input: 'a question to the user',
};

/** What the step's context says to do: a tool and its argument, or nothing. */
function action(context: string): { tool: string | undefined; argument: string } {
  const match = /^Use (\S+?)(?: on: (.*))?$/.exec(context.trim());
  return match ? { tool: match[1], argument: match[2] ?? '' } : { tool: undefined, argument: '' };
}

function reasonReply(context: string, goal: string): string {
  const { tool, argument } = action(context);
  const plan = !tool
    ? `No tool is needed to ${goal.charAt(0).toLowerCase()}${goal.slice(1)}.`
    : tool === 'write_file'
      ? 'Write the file, once a person approves it.'
      : `Use ${TOOL_PHRASES[tool] ?? `the ${spoken(tool)} tool`}${argument ? ` on ${argument}` : ''}.`;
  return block(`Step goal: ${goal}. ${plan}`, { plan, tools_to_consider: tool ? [tool] : [], finish: !tool });
}

function actReply(request: CompletionRequest, context: string): CompletionResult {
  const { tool, argument } = action(context);
  const offered = new Set((request.tools ?? []).map((each) => each.name));
  if (!tool || (!offered.has(tool) && tool !== 'request_input'))
    return { text: tool ? `The ${spoken(tool)} tool is not enabled for this run.` : 'No tool is needed.', toolCalls: [] };
  const args =
    tool === 'calculator'
      ? { expression: argument }
      : tool === 'read_file'
        ? { name: argument }
        : tool === 'request_input'
          ? { question: argument }
          : tool === 'write_file'
            ? (JSON.parse(argument) as Record<string, unknown>)
            : {};
  const call: LlmToolCall = { id: `call_demo_${tool}`, name: tool, arguments: JSON.stringify(args) };
  return { text: '', toolCalls: [call] };
}

function observeReply(request: CompletionRequest, context: string, goal: string): string {
  const { tool, argument } = action(context);
  const result = lastToolResult(request);
  let observation: string;
  let complete = true;
  if (context.startsWith('Needs file: ')) {
    const name = context.slice('Needs file: '.length);
    observation = `${name} is missing: there is no file ${name} in this chat to read.`;
  } else if (context === 'Needs an attached file') {
    observation = `${NO_ATTACHMENT}, so there is nothing to read.`;
  } else if (context === 'Explain what could not be done') {
    observation = 'An earlier step could not be done, so the request cannot be answered from the plan.';
  } else if (context.startsWith('Explain missing file: ')) {
    const name = context.slice('Explain missing file: '.length);
    observation = `Attach ${name} with the paperclip (or drop it on the page) and ask again.`;
  } else if (context.startsWith('Summarize file: ')) {
    observation = `There is nothing to summarize: ${context.slice('Summarize file: '.length)} was never read.`;
    complete = false;
  } else if (!tool) {
    observation = `${goal}: done.`;
  } else if (result === undefined) {
    observation = `The ${spoken(tool)} tool is not enabled for this run, so this step cannot be done.`;
    complete = false;
  } else if (result.startsWith('Error:')) {
    const error = shorten(result.replace(/^Error:\s*/, ''), 200).replace(/\.$/, '');
    observation = tool === 'calculator' ? `The calculator could not evaluate ${argument}: ${error}.` : `The ${spoken(tool)} tool failed: ${error}.`;
    complete = false;
  } else if (tool === 'request_input') {
    observation = `The user answered: ${result}`;
  } else if (tool === 'calculator') {
    observation = `${argument} = ${result}.`;
  } else if (tool === 'current_time') {
    observation = `The clock says ${result} (UTC).`;
  } else if (tool === 'read_file') {
    observation = summarize(argument, result);
  } else if (tool === 'write_file') {
    observation = `${result}.`;
  } else {
    observation = `${tool} returned: ${shorten(result, 200)}`;
  }
  return block(observation, { observation, step_complete: complete });
}

function lastToolResult(request: CompletionRequest): string | undefined {
  for (let at = request.messages.length - 1; at >= 0; at--) {
    const message = request.messages[at]!;
    if (message.role === 'tool') return message.content;
  }
  return undefined;
}

/** The answer from the steps (the `steps` variable): what each part found, then how it was reached. */
function synthesisReply(request: CompletionRequest): string {
  const steps = Array.isArray(request.variables?.steps)
    ? (request.variables.steps as Array<{ index: number; goal: string; status: string; observation: string }>)
    : [];
  const notes = text(request.variables?.notes);
  if (steps.length === 0 || steps.every((each) => each.goal === SAY_WHAT_I_CAN)) return fallbackAnswer(readSituation(request));
  const lines = steps.map((each) => `${each.index}. ${each.goal} — ${each.status}${each.observation ? `: ${each.observation.split('\n')[0]}` : ''}`);
  const found = answerParts(steps.filter((each) => each.status === 'done' && each.observation).map((each) => each.observation));
  // What could not be done: a failed step, or a step that found something missing. The answer rests on none of it.
  const problems = steps
    .filter((each) => each.observation && (each.status === 'failed' || PROBLEM.test(each.observation)))
    .map((each) => each.observation.split('\n')[0]!);
  const body = [found.length ? found.join('\n\n') : '', 'How I got there:', lines.join('\n'), ...(notes ? [notes] : [])].filter(Boolean).join('\n\n');
  if (problems.length > 0) return unresolvedAnswer(problems[0]!, body);
  if (found.length === 0) return unresolvedAnswer('The plan did not reach an answer.', body);
  return body;
}

/** An observation saying that something could not be done. */
const PROBLEM = /^(?:\S+ is missing: |There is no file |No file is attached|The calculator could not|The .+ tool (?:failed|is not enabled))/;

/**
 * The answer's parts from the steps' findings: the calculation's result (its last step), the
 * time, each file's summary, what to do about a missing file. Other findings are not answers.
 */
function answerParts(observations: string[]): string[] {
  const calculated = observations
    .map((observation) => /^(.*) = (-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\.$/.exec(observation))
    .filter((match) => match !== null)
    .at(-1);
  const parts = calculated ? [`\`${calculated[1]}\` = **${calculated[2]}**.`] : [];
  for (const observation of observations) {
    const time = /^The clock says (.+) \(UTC\)\.$/.exec(observation);
    if (time) parts.push(`It is now **${time[1]}** (UTC).`);
    else if (/^\*\*[^*]+\*\*: \d+ lines?/.test(observation) || /^Attach /.test(observation) || /^Wrote /.test(observation)) parts.push(observation);
  }
  return parts;
}
