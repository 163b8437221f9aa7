import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import type { LlmMessage } from '../../messages.ts';
import { findExpression, shorten } from '../demo-language.ts';

/**
 * The demo model's answers to research's calls: a three-stage graph for any question (gather,
 * analyse, synthesize), tasks that run side by side in the first stage, an analysis with the
 * calculator when the question holds arithmetic (else a count of the question's words, also real),
 * a stage verifier that finds stage 1 thin once (one follow-up task) and then passes, and a report
 * made from what the tasks found.
 */
export async function researchDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  const vars = request.variables ?? {};
  const goal = String(vars.goal ?? '');
  switch (request.purpose) {
    case 'research.plan':
      return data(planFor(goal));
    case 'research.task':
      await demo.pause(request.signal);
      return taskReply(request, goal);
    case 'research.task_result':
      return data(taskResult(request, goal));
    case 'research.task_verifier':
      return data({ verdict: 'PASS', issues: [], follow_up_tasks: [] });
    case 'research.stage_verifier': {
      const stage = String(vars.stage ?? '');
      const results = String(vars.results ?? '');
      if (stage.startsWith('1.') && !/1\.3 /.test(results)) {
        return data({
          verdict: 'FAIL',
          issues: ['The gathered material has no cross-check of the figures.'],
          follow_up_tasks: [{ title: 'Cross-check the figures gathered so far', agent: 'verifier', acceptance_criteria: ['every figure recomputed once'] }],
        });
      }
      return data({ verdict: 'PASS', issues: [], follow_up_tasks: [] });
    }
    case 'research.final_verifier':
      return data({ verdict: 'PASS', issues: [], follow_up_tasks: [] });
    case 'research.report': {
      const results = String(vars.results ?? '');
      return demo.say(`# Report: ${shorten(goal, 100)}\n\nWhat the tasks found, stage by stage:\n\n${results}\n\nEvery stage passed its verifier; the figures were cross-checked once.`, request);
    }
    default:
      return demo.unknownPurpose(request);
  }
}

function data(parsed: unknown): CompletionResult {
  return { text: JSON.stringify(parsed), toolCalls: [], parsed };
}

function planFor(goal: string) {
  const task = (id: string, title: string, agent: string, depends_on: string[] = []) => ({ id, title, agent, depends_on, acceptance_criteria: ['a short, sourced finding'], inputs: [] });
  return {
    stages: [
      { id: '1', name: 'Gather', verifier_criteria: ['the material covers the question', 'figures are cross-checked'], tasks: [task('1.1', `Collect what the question states: ${shorten(goal, 60)}`, 'literature_scout'), task('1.2', 'Work out the figures in the question', 'derivation_coder')] },
      { id: '2', name: 'Analyse', verifier_criteria: ['the analysis uses the gathered figures'], tasks: [task('2.1', 'Relate the findings to the question', 'paper_reader')] },
      { id: '3', name: 'Synthesize', verifier_criteria: ['one clear answer'], tasks: [task('3.1', 'Write the answer from the findings', 'orchestrator')] },
    ],
  };
}

/** The task's tool loop: the calculator once for arithmetic (derivation and verifier tasks), else a finding in words. */
function taskReply(request: CompletionRequest, goal: string): CompletionResult {
  const agent = String(request.variables?.agent ?? '');
  const expression = findExpression(goal);
  const calculated = toolResults(request.messages);
  if ((agent === 'derivation_coder' || agent === 'verifier') && expression && calculated.length === 0 && request.tools?.some((tool) => tool.name === 'calculator')) {
    return { text: '', toolCalls: [{ id: `call_demo_${String(request.variables?.task_id ?? 'task').replace('.', '_')}`, name: 'calculator', arguments: JSON.stringify({ expression }) }] };
  }
  return { text: findingOf(request, goal), toolCalls: [] };
}

function taskResult(request: CompletionRequest, goal: string) {
  const taskId = String(request.variables?.task_id ?? '');
  const finding = findingOf(request, goal);
  return {
    summary: finding,
    result: finding,
    evidence: [{ source: taskId.startsWith('1.') ? 'the question as asked' : `the results ledger of ${STATE_NAME}`, location: taskId }],
    artifacts: taskId === '1.2' ? [{ name: 'figures.md', content: `# Figures\n\n${finding}\n` }] : [],
  };
}

const STATE_NAME = 'RESEARCH_STATE.md';

/** What the task found: computed, never made up. */
function findingOf(request: CompletionRequest, goal: string): string {
  const agent = String(request.variables?.agent ?? '');
  const expression = findExpression(goal);
  const value = toolResults(request.messages).at(-1);
  const words = goal.split(/\s+/).filter(Boolean).length;
  switch (agent) {
    case 'literature_scout':
      return `The question asks: “${shorten(goal, 100)}” (${words} words${expression ? `, with the calculation \`${expression}\`` : ''}).`;
    case 'derivation_coder':
      return expression ? `\`${expression}\` = ${value ?? '(the calculator is not enabled)'}.` : `The question holds no calculation; it has ${words} words.`;
    case 'verifier':
      return expression ? `Recomputed \`${expression}\` = ${value ?? '?'}: the figure stands.` : 'Nothing to recompute: the question holds no figures.';
    case 'paper_reader': {
      const results = String(request.variables?.results ?? '');
      const figure = /= ([^.\s]+)\./.exec(results)?.[1];
      return figure ? `The gathered figure ${figure} is the value of the calculation the question holds.` : 'The gathered material restates the question; there is no figure to relate.';
    }
    default: {
      const results = String(request.variables?.results ?? '');
      const figure = /= ([^.\s]+)\./.exec(results)?.[1];
      return figure
        ? `The calculation in the question, \`${expression ?? '?'}\`, comes to **${figure}** (computed and cross-checked with the calculator).`
        : `The findings restate the question “${shorten(goal, 80)}”; the demo model cannot research beyond it.`;
    }
  }
}

function toolResults(messages: LlmMessage[]): string[] {
  return messages.filter((message) => message.role === 'tool').map((message) => (message as { content: string }).content);
}
