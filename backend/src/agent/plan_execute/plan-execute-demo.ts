import type { CompletionRequest, CompletionResult, DemoKit, LlmToolCall } from '../../llm/llm-client.ts';
import { block, fallbackAnswer, findChain, readSituation, shorten, summarize } from '../demo-language.ts';
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
      return data({ viable: true, confidence: 0.9, reason: 'The remaining steps still fit the request.' });
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

/** A step for each part of the request the demo can do: a calculation (a chain, link by link: every link, never fewer), the time, a file. */
function firstPlan(request: CompletionRequest): DemoStep[] {
  const situation = readSituation(request);
  const tools = new Set(toolNames(request));
  const steps: DemoStep[] = [];
  const chain = findChain(situation.question);
  if (chain.length > 0 && tools.has('calculator')) {
    let running = '';
    for (const link of chain) {
      running = link.expression ?? `(${running}) ${link.operator} ${link.operand}`;
      steps.push(step(`Compute ${running}`, 'calculator', running, 'The calculator returns a number.'));
    }
  } else if (situation.expression && tools.has('calculator')) {
    steps.push(step(`Compute ${situation.expression}`, 'calculator', situation.expression, 'The calculator returns a number.'));
  }
  if (situation.wantsTime && tools.has('current_time')) steps.push(step('Read the current time', 'current_time', '', 'The clock gives the time.'));
  if (situation.file) {
    steps.push(step(`Read ${situation.file}`, 'read_file', situation.file, 'The file is read and summarized.'));
  } else if (situation.missingFile) {
    steps.push(step(`Find ${situation.missingFile} among the session's files`, undefined, `Needs file: ${situation.missingFile}`, 'The file is there.'));
    steps.push(step(`Summarize ${situation.missingFile}`, undefined, `Summarize file: ${situation.missingFile}`, 'A summary is written.'));
  }
  if (steps.length === 1) steps.push(step('Check the result answers the request', undefined, 'Check', 'The findings answer the request.'));
  return steps;
}

/** After a step found a file missing: tell the user how to attach it, instead of summarizing nothing. */
function replan(request: CompletionRequest): DemoStep[] {
  const missing = readSituation(request).missingFile ?? 'the file';
  return [step(`Tell the user how to attach ${missing}`, undefined, `Explain missing file: ${missing}`, 'The user knows what to do.')];
}

/** What the step's context says to do: a tool and its argument, or nothing. */
function action(context: string): { tool: string | undefined; argument: string } {
  const match = /^Use (\S+?)(?: on: (.*))?$/.exec(context.trim());
  return match ? { tool: match[1], argument: match[2] ?? '' } : { tool: undefined, argument: '' };
}

function reasonReply(context: string, goal: string): string {
  const { tool, argument } = action(context);
  const plan = tool ? `Call ${tool}${argument ? ` with ${argument}` : ''}.` : `No tool is needed to ${goal.charAt(0).toLowerCase()}${goal.slice(1)}.`;
  return block(`Step goal: ${goal}. ${plan}`, { plan, tools_to_consider: tool ? [tool] : [], finish: !tool });
}

function actReply(request: CompletionRequest, context: string): CompletionResult {
  const { tool, argument } = action(context);
  const offered = new Set((request.tools ?? []).map((each) => each.name));
  if (!tool || !offered.has(tool)) return { text: tool ? `The ${tool} tool is not enabled for this run.` : 'No tool is needed.', toolCalls: [] };
  const args = tool === 'calculator' ? { expression: argument } : tool === 'read_file' ? { name: argument } : {};
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
    observation = `${name} is missing: this chat has no such file.`;
  } else if (context.startsWith('Explain missing file: ')) {
    const name = context.slice('Explain missing file: '.length);
    observation = `Attach ${name} with the paperclip (or drop it on the page) and ask again.`;
  } else if (context.startsWith('Summarize file: ')) {
    observation = `There is nothing to summarize: ${context.slice('Summarize file: '.length)} was never read.`;
    complete = false;
  } else if (!tool) {
    observation = `${goal}: done.`;
  } else if (result === undefined) {
    observation = `The ${tool} tool is not enabled for this run, so this step cannot be done.`;
    complete = false;
  } else if (result.startsWith('Error:')) {
    observation = `${tool} failed: ${shorten(result.replace(/^Error:\s*/, ''), 200)}`;
    complete = false;
  } else if (tool === 'calculator') {
    observation = `${argument} = ${result}.`;
  } else if (tool === 'current_time') {
    observation = `The clock says ${result} (UTC).`;
  } else if (tool === 'read_file') {
    observation = summarize(argument, result);
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

/** The answer from the steps (the `steps` variable): the last finding first, then how it was reached. */
function synthesisReply(request: CompletionRequest): string {
  const steps = Array.isArray(request.variables?.steps) ? (request.variables.steps as Array<{ index: number; goal: string; status: string; observation: string }>) : [];
  const notes = text(request.variables?.notes);
  if (steps.length === 0) return fallbackAnswer(readSituation(request));
  const found = steps.filter((each) => each.status === 'done' && each.observation).at(-1);
  const lines = steps.map((each) => `${each.index}. ${each.goal} — ${each.status}${each.observation ? `: ${each.observation}` : ''}`);
  return [found ? resultLine(found.observation) : 'The plan did not reach an answer.', 'How I got there:', lines.join('\n'), ...(notes ? [notes] : [])].join('\n\n');
}

/** The finding that answers: a calculation's result in bold ("… = **29**."), anything else bold whole. */
function resultLine(observation: string): string {
  const calculated = /^(.*) = (-?\d+(?:\.\d+)?)\.$/.exec(observation);
  return calculated ? `\`${calculated[1]}\` = **${calculated[2]}**.` : `**${observation}**`;
}
