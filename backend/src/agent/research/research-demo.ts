import type { CompletionRequest, CompletionResult, DemoKit } from '../../llm/llm-client.ts';
import type { LlmMessage } from '../../messages.ts';
import { evaluateExpression } from '../../tools/expression.ts';
import { isSteerTurn } from '../kernel/steering.ts';
import {
  chainExpression,
  chainResult,
  findChain,
  findingsOf,
  nextToolCall,
  readSituation,
  requestParts,
  type Situation,
  shorten,
} from '../common/demo-language.ts';

/**
 * The demo model's answers to research's calls, from the shared demo brain: a graph planned from
 * the request's parts (a question first when it is vague), tasks that do the work for real (the
 * scout reads the clock and the files, the derivation coder computes every link of a calculation,
 * the verifier recomputes it another way), verifiers that judge what the tasks found (a figure
 * that does not check out fails), and a report made from the findings. Nothing is planted.
 */
export async function researchDemo(request: CompletionRequest, demo: DemoKit): Promise<CompletionResult> {
  const vars = request.variables ?? {};
  const goal = String(vars.goal ?? '');
  switch (request.purpose) {
    case 'research.plan':
      return data(planFor(readSituation({ ...request, messages: [{ role: 'user', content: goal }] })));
    case 'research.task':
      await demo.pause(request.signal);
      return taskReply(request, goal);
    case 'research.task_result':
      return data(taskResult(request, goal));
    case 'research.task_verifier':
      return data(judgeTask(String(vars.task ?? ''), lastUser(request.messages), goal, String(vars.results ?? '')));
    case 'research.stage_verifier':
      return data(judgeStage(String(vars.results ?? ''), goal));
    case 'research.final_verifier':
      return data(judgeFinal(String(vars.results ?? ''), goal));
    case 'research.report':
      return demo.say(report(goal, String(vars.results ?? '')), request);
    default:
      return demo.unknownPurpose(request);
  }
}

function data(parsed: unknown): CompletionResult {
  return { text: JSON.stringify(parsed), toolCalls: [], parsed };
}

const DO_ASKED = 'Do what the person asked for';

/** Stages from the request's parts: gather (the scout and the derivation side by side), check, synthesize. */
function planFor(situation: Situation) {
  const task = (id: string, title: string, agent: string, criteria: string) => ({
    id,
    title,
    agent,
    depends_on: [],
    acceptance_criteria: [criteria],
    inputs: [],
  });
  const goal = shorten(situation.question, 60);
  const synthesize = {
    id: '3',
    name: 'Synthesize',
    verifier_criteria: ['one clear answer from the findings'],
    tasks: [task('3.1', 'Write the answer from the findings', 'orchestrator', 'every finding used')],
  };
  if (situation.ambiguous) {
    return {
      stages: [
        {
          id: '1',
          name: 'Clarify',
          verifier_criteria: ['the person said what they need'],
          tasks: [task('1.1', `Ask what “${goal}” is after`, 'literature_scout', 'a clear request')],
        },
        {
          id: '2',
          name: 'Work it out',
          verifier_criteria: ['every part of the request is done'],
          tasks: [task('2.1', DO_ASKED, 'derivation_coder', 'every part done with the tools')],
        },
        synthesize,
      ],
    };
  }
  const parts = requestParts(situation);
  const arithmetic = parts.some((part) => part.kind === 'calculator');
  const lookups = parts.filter((part) => part.kind !== 'calculator');
  const gather = [
    ...(lookups.length || !arithmetic
      ? [
          task(
            '1.1',
            lookups.length ? lookups.map((part) => part.title).join('; ') : `Collect what the question states: ${goal}`,
            'literature_scout',
            'what the question asks for, looked up',
          ),
        ]
      : []),
    ...(arithmetic
      ? [
          task(
            lookups.length || !arithmetic ? '1.2' : '1.1',
            `Work out ${situation.chain.length > 1 ? 'the calculation link by link' : 'the figure in the question'}`,
            'derivation_coder',
            'every figure from the calculator',
          ),
        ]
      : []),
  ];
  const check = arithmetic
    ? task('2.1', 'Recompute the calculation another way, as one expression', 'verifier', 'the figure recomputed and compared')
    : task('2.1', 'Check the findings against the question', 'paper_reader', 'every part of the question covered');
  return {
    stages: [
      { id: '1', name: 'Gather', verifier_criteria: ['every part of the question looked up or computed'], tasks: gather },
      { id: '2', name: 'Check', verifier_criteria: ['the findings check out'], tasks: [check] },
      synthesize,
    ],
  };
}

/**
 * What a task works on: the goal and the person's answer to the question a task asked (its own
 * call's, or from the results so far), with this task's tool results.
 */
function taskSituation(request: CompletionRequest, goal: string): Situation {
  const answered = /The person asked for: (.+?)\.?$/m.exec(String(request.variables?.results ?? ''))?.[1];
  // The file the plan named for "this file" (the chat's files now include the run's own, newer ones).
  const planned = /Read and summarize (\S+)/.exec(String(request.variables?.task ?? ''))?.[1];
  const asked = answered ? `${goal}\n${answered}` : goal;
  const content = planned && !asked.includes(planned) ? `${asked}\n(${planned})` : asked;
  const work = request.messages.filter((message) => message.role === 'assistant' || message.role === 'tool');
  return readSituation({ ...request, messages: [{ role: 'user', content } as LlmMessage, ...work] });
}

/** Each agent's share of the work, done with the tools one call at a time. */
function taskReply(request: CompletionRequest, goal: string): CompletionResult {
  const agent = String(request.variables?.agent ?? '');
  const title = String(request.variables?.task ?? '');
  const situation = taskSituation(request, goal);
  const next = nextToolCall(shareOf(agent, title, situation));
  if (next.call) return { text: '', toolCalls: [{ ...next.call, id: `${next.call.id}_${String(request.variables?.task_id ?? 'task').replace(/\W/g, '_')}` }] };
  return { text: findingOf(request, goal), toolCalls: [] };
}

/** The part of the situation an agent does: the scout looks things up (and asks), the derivation coder computes, the verifier recomputes in one go. */
function shareOf(agent: string, title: string, situation: Situation): Situation {
  const lookups = { ...situation, expression: undefined, chain: [], calculations: [] };
  const sums = {
    ...situation,
    wantsTime: false,
    file: undefined,
    missingFile: undefined,
    noAttachment: false,
    wantsFileList: false,
    write: undefined,
    named: undefined,
    ambiguous: false,
  };
  if (title.includes(DO_ASKED)) return { ...situation, ambiguous: false };
  switch (agent) {
    case 'literature_scout':
      return lookups;
    case 'derivation_coder':
      return sums;
    case 'verifier': {
      const whole = chainExpression(situation.chain);
      return { ...sums, chain: whole ? [{ expression: whole, words: whole }] : [], expression: situation.calculations.length ? undefined : whole };
    }
    default:
      return {
        ...lookups,
        ambiguous: false,
        wantsTime: false,
        file: undefined,
        missingFile: undefined,
        noAttachment: false,
        wantsFileList: false,
        write: undefined,
        named: undefined,
      };
  }
}

function taskResult(request: CompletionRequest, goal: string) {
  const taskId = String(request.variables?.task_id ?? '');
  const agent = String(request.variables?.agent ?? '');
  const finding = findingOf(request, goal);
  const figures = agent === 'derivation_coder' && /= -?\d/.test(finding);
  return {
    summary: finding,
    result: finding,
    evidence: [
      {
        source:
          agent === 'literature_scout'
            ? 'the tools (clock, files) and the question'
            : agent === 'orchestrator'
              ? 'the findings of the earlier stages'
              : 'the calculator',
        location: taskId,
      },
    ],
    artifacts: figures ? [{ name: 'figures.md', content: `# Figures\n\n${finding}\n` }] : [],
  };
}

/** What the task found: from its tools' results and the findings so far, never made up. */
function findingOf(request: CompletionRequest, goal: string): string {
  const agent = String(request.variables?.agent ?? '');
  const title = String(request.variables?.task ?? '');
  const results = String(request.variables?.results ?? '');
  const situation = taskSituation(request, goal);
  const asked = situation.results.get('request_input');
  if (asked !== undefined) return `The person asked for: ${asked.replace(/\s+/g, ' ').trim()}.`;
  if (title.includes(DO_ASKED)) return findingsOf(situation).answers.join('\n\n') || 'The request still names nothing the demo model can do.';
  switch (agent) {
    case 'literature_scout': {
      const { answers, problems } = findingsOf(shareOf(agent, title, situation));
      if (problems.length) return [...problems, ...answers].join(' ');
      return answers.length
        ? answers.join(' ')
        : `The question asks: “${shorten(goal, 100)}”. There is nothing in it to look up with the tools of this run, and the demo model does not answer from memory.`;
    }
    case 'derivation_coder': {
      const { calculations, chain } = situation;
      const expression = chainExpression(chain);
      if (!expression) return 'The question holds no calculation.';
      if (calculations.length === 0) return `\`${expression}\` could not be computed: the calculator is not enabled for this run.`;
      const failed = calculations.find((value) => value.startsWith('Error:'));
      if (failed) return `The calculator could not evaluate ${expression}: ${failed.replace(/^Error:\s*/, '').replace(/\.$/, '')}.`;
      return `\`${expression}\` = ${calculations.at(-1)} (${calculations.length} calculator step${calculations.length === 1 ? '' : 's'}: ${calculations.join(' → ')}).`;
    }
    case 'verifier': {
      const expression = chainExpression(situation.chain);
      const value = situation.calculations.at(-1);
      const derived = figureIn(results);
      if (!expression || value === undefined) return 'Nothing was recomputed: the calculator is not enabled for this run.';
      if (value.startsWith('Error:')) return `Nothing was recomputed: the calculator could not evaluate ${expression} either.`;
      return derived === value
        ? `Recomputed \`${expression}\` = ${value} in one go: it matches the derivation.`
        : `Recomputed \`${expression}\` = ${value} in one go: it does not match the derivation's ${derived ?? 'missing figure'}.`;
    }
    case 'paper_reader': {
      if (!results.trim()) return 'There are no findings to check yet.';
      if (/nothing in it to look up/.test(results))
        return 'The findings answer nothing: the question needs knowledge, and the demo model looks up only the clock and the files, and computes. The answer has to say so.';
      return `The findings cover the question: ${results.split('\n').length} finding${results.split('\n').length === 1 ? '' : 's'}, each from a tool.`;
    }
    default:
      return answerFrom(results);
  }
}

/** The figure a derivation found ("`…` = 29 (…)"), from the results ledger. */
function figureIn(results: string): string | undefined {
  return /\(derivation_coder\): `[^`]+` = (-?[\d.e+-]+)/.exec(results)?.[1];
}

/** The answer from the findings: the computed figure in bold, then what the scout looked up (or what the person's request gave). */
function answerFrom(results: string): string {
  const lines = results.split('\n');
  const parts: string[] = [];
  const derived = /\((?:derivation_coder)\): (`[^`]+`) = (-?[\d.e+-]+)/.exec(results);
  if (derived) parts.push(`${derived[1]} = **${derived[2]}**.`);
  for (const line of lines) {
    const scout = /^- [\d.]+ \(literature_scout\): (.+)$/.exec(line)?.[1];
    if (scout && !scout.startsWith('The person asked for:')) parts.push(scout);
    const done = /^- [\d.]+ \(derivation_coder\): (.+)$/.exec(line)?.[1];
    if (done && !derived) parts.push(done);
  }
  return parts.length ? parts.join('\n\n') : 'The findings hold no answer: there was nothing the demo model could look up or compute.';
}

/** A task checked against what it should have found. */
function judgeTask(task: string, content: string, goal: string, results: string) {
  const figure = /`([^`]+)` = (-?[\d.e+-]+)/.exec(content);
  if (figure) {
    const expected = computed(figure[1]!);
    if (expected !== undefined && expected !== figure[2])
      return fail(`${task}: \`${figure[1]}\` is ${expected}, not ${figure[2]}.`, `Recompute \`${figure[1]}\``, 'verifier');
  }
  if (/could not be computed|not enabled|no answer/.test(content))
    return { verdict: 'CONDITIONAL', issues: [`${task}: ${shorten(content.split('\n').at(-1)!, 200)}`], follow_up_tasks: [] };
  void goal;
  void results;
  return pass();
}

/** A stage passes when its findings check out: a figure that disagrees with a recomputation, or one that could not be computed, fails it. */
function judgeStage(results: string, goal: string) {
  // What no tool could do fails the stage, with no follow-up task: doing it again cannot change it.
  const cannot = CANNOT.exec(results)?.[0];
  if (cannot) return { verdict: 'FAIL', issues: [cannot], follow_up_tasks: [] };
  if (/nothing in it to look up/.test(results) && !/ \((?:derivation_coder)\): /.test(results))
    return {
      verdict: 'FAIL',
      issues: [
        `The offline demo model found nothing it can do in “${shorten(goal, 80)}”: it computes, reads the clock and the chat's files, and answers nothing from memory.`,
      ],
      follow_up_tasks: [],
    };
  // A figure is computed again at most twice; then the person is asked, not a third try added.
  const tries = (results.match(/ \((?:derivation_coder|verifier)\): /g) ?? []).length;
  const mismatch = /it does not match the derivation's ([^.]+)\./.exec(results);
  if (mismatch && tries >= 3)
    return {
      verdict: 'FAIL',
      issues: [
        `The figure still comes out two ways after two retries (the recomputation against ${mismatch[1]}): which should the answer use, the step-by-step figure or the one-expression one?`,
      ],
      follow_up_tasks: [],
    };
  if (mismatch) return fail(`The recomputation does not match the derivation (${mismatch[1]}).`, 'Compute the figure again, link by link', 'derivation_coder');
  if (/could not be computed|not enabled for this run/.test(results) && figureIn(results) === undefined)
    return fail(
      'A figure the question needs could not be computed: the calculator is not enabled for this run.',
      'Compute the figure with the calculator enabled',
      'derivation_coder',
    );
  const expected = chainResult(findChain(goal));
  const derived = figureIn(results);
  if (expected !== undefined && derived !== undefined && derived !== expected)
    return fail(`The derived figure ${derived} is wrong; the calculation comes to ${expected}.`, 'Compute the figure again, link by link', 'derivation_coder');
  return pass();
}

/** The final check: the answer is there, and any figure in it is the calculation's value. */
function judgeFinal(results: string, goal: string) {
  const answer = /^- [\d.]+ \(orchestrator\): (.+)$/m.exec(results)?.[1];
  if (!answer) return fail('There is no answer among the findings.', 'Write the answer from the findings', 'orchestrator');
  const expected = chainResult(findChain(goal));
  if (expected !== undefined && !answer.includes(`**${expected}**`))
    return fail(`The answer does not give the calculation's value ${expected}.`, 'Write the answer again from the findings', 'orchestrator');
  return pass();
}

function computed(expression: string): string | undefined {
  try {
    return String(evaluateExpression(expression));
  } catch {
    return undefined;
  }
}

/** A finding that says what a tool could not do (or that a file is not there), as one sentence. */
const CANNOT =
  /(?:The calculator could not evaluate [^\n]*?\.(?=\s|$)|There is no file \S+ in this chat to read\.|No file is attached to this chat, so there is nothing to read\.|The [\w ]+ tool failed: [^\n]*?\.(?=\s|$))/;

const pass = () => ({ verdict: 'PASS', issues: [] as string[], follow_up_tasks: [] as unknown[] });
const fail = (issue: string, title: string, agent: string) => ({
  verdict: 'FAIL',
  issues: [issue],
  follow_up_tasks: [{ title, agent, acceptance_criteria: ['the figure checks out'] }],
});

/** The report: the answer first, then what each task found. */
function report(goal: string, results: string): string {
  const answer = /^- [\d.]+ \(orchestrator\): (.+)$/m.exec(results)?.[1] ?? answerFrom(results);
  const found = results
    .split('\n')
    .filter((line) => line.trim() && !/\(orchestrator\)/.test(line))
    .join('\n');
  return `# Report: ${shorten(goal, 100)}\n\n## Answer\n\n${answer}\n\n## What each task found\n\n${found}\n\nEvery stage passed its verifier.`;
}

function lastUser(messages: LlmMessage[]): string {
  const message = messages.findLast((candidate) => candidate.role === 'user' && !isSteerTurn(candidate.content));
  return message?.role === 'user' ? message.content : '';
}
