import type { SolverStage } from '@stepwise/shared-types';
import { z } from 'zod';
import { ERROR_CODE, isAbortError, ModelError, StepwiseError } from '../../errors.ts';
import type { LlmMessage } from '../../messages.ts';
import { type PersonMessage, personTurns } from '../common/person-messages.ts';
import { askQuestion } from '../kernel/ask.ts';
import { defineStrategy, type Run, type RunSuccess } from '../kernel/strategy.ts';
import { runToolCalls, toolCallMessages } from '../kernel/tool-calls.ts';
import { solverDemo } from './solver-demo.ts';
import { decisionEvent, isStageEvent, stageCompleteEvent, stageStartEvent } from './solver-events.ts';

/** The templates in prompts/solver/: one system prompt per stage, each with an example of its variables. */
const stageVariables = { problem: 'p', loop: 1, max_loops: 3, next_focus: '', tool_names: ['calculator'], files_manifest: '' };
const prompts = {
  approach_proposer: stageVariables,
  approach_evaluator: stageVariables,
  problem_solver: stageVariables,
  expert_evaluator: stageVariables,
  orchestrator: stageVariables,
};

const options = z
  .object({
    approaches: z.boolean().default(true).describe('Propose and weigh approaches before solving'),
    auto_advance: z.boolean().default(true).describe('Go from stage to stage without asking (off: confirm each next stage)'),
    max_loops: z.number().int().min(1).max(10).default(3).describe('Most solver/evaluator loops'),
    require_keyword: z.boolean().default(false).describe('Refuse a problem statement without "problem", "question" or "research"'),
  })
  .strict();

type SolverRun = Run<z.infer<typeof options>, typeof prompts>;

/** The orchestrator's answer, as schema `orchestrator_decision` (strict: every field present). */
export const OrchestratorDecision = z.object({
  action: z.enum(['CONTINUE', 'FINAL', 'ASK_USER']),
  rationale: z.string(),
  final_answer: z.string(),
  question_for_user: z.string(),
  next_focus: z.string(),
});
export type OrchestratorDecision = z.infer<typeof OrchestratorDecision>;

export const YES = 'Yes';
export const NO = 'No';
const KEYWORDS = /\b(problem|question|research)\b/i;
/** Tool rounds a problem_solver stage may take before it must write its solution. */
const SOLVER_TOOL_ROUNDS = 6;

const STAGE_WORDS: Record<SolverStage, string> = {
  approach_proposer: 'the approach proposer',
  approach_evaluator: 'the approach evaluator',
  problem_solver: 'the problem solver',
  expert_evaluator: 'the expert evaluator',
  orchestrator: 'the orchestrator',
};

/** A problem statement the solver refuses, with why. */
export class ProblemStatementError extends StepwiseError {
  constructor(message: string) {
    super(ERROR_CODE.invalidMessage, message);
  }
}

/** What the run carries from stage to stage. */
interface Workflow {
  loop: number;
  /** Stages run so far: each is a step of the run (a restore point). */
  stages: number;
  /** The previous stage's output: the next stage's user input. */
  input: string;
  /** The last problem_solver output: the answer when the loops run out. */
  solution: string;
  nextFocus: string;
  /** The person's answers to ASK_USER, joined to the next solver input. */
  answers: string[];
  /** The messages the person sent the run while it worked, as read so far: every later stage reads them after its input. */
  heard: PersonMessage[];
}

/**
 * Staged problem solving (seed 000): optionally approaches proposed and weighed, then loops of
 * problem_solver → expert_evaluator → orchestrator until the orchestrator answers (FINAL), asks
 * the person (ASK_USER, then on with the answer) or the loops run out. Each stage is one model call
 * (the solver may use tools first) whose output is the next stage's input; unless auto_advance,
 * the person confirms each next stage (No pauses the run; resume asks again). Every finished
 * stage is in the journal, so a resume (or a restart) goes on at the stage that did not finish.
 */
export const solver = defineStrategy({
  name: 'solver',
  label: 'Staged solver',
  description: 'Proposes approaches, solves, has the solution checked by an expert, and loops until an orchestrator is satisfied.',
  options,
  prompts,
  demo: solverDemo,
  session: {
    // A snapshot says where the work stands: the loop and the last stage.
    snapshotLabel(events) {
      const stage = events.findLast(isStageEvent);
      return stage ? ` · loop ${stage.loop} · ${stage.stage}` : '';
    },
  },
  async run(run: SolverRun): Promise<RunSuccess> {
    const problem = checkProblem(run.input.question, run.options.require_keyword);
    const maxLoops = Math.min(run.options.max_loops, run.input.maxSteps);
    const flow: Workflow = { loop: 1, stages: 0, input: problem, solution: '', nextFocus: '', answers: [], heard: [] };

    if (run.options.approaches) {
      await stage(run, flow, 'approach_proposer', 'approach_evaluator', problem);
      await stage(run, flow, 'approach_evaluator', 'problem_solver');
    }
    for (;;) {
      const solverInput = [flow.input, ...flow.answers.map((answer) => `The user answered: ${answer}`)].join('\n\n');
      flow.solution = await stage(run, flow, 'problem_solver', 'expert_evaluator', solverInput);
      // The evaluator and the orchestrator judge the problem as the person clarified it.
      const clarified = [problem, ...flow.answers.map((answer) => `The user answered: ${answer}`)].join('\n\n');
      const evaluation = await stage(run, flow, 'expert_evaluator', 'orchestrator', `Problem:\n${clarified}\n\nProposed solution:\n${flow.solution}`);
      const decision = await orchestrate(run, flow, `Problem:\n${clarified}\n\nSolution:\n${flow.solution}\n\nEvaluation:\n${evaluation}`);
      if (decision.action === 'FINAL') return { answer: decision.final_answer.trim() || flow.solution, steps: flow.stages, reason: 'answered' };
      if (flow.loop >= maxLoops) {
        const limit = `I stopped after ${flow.loop} solver loop${flow.loop === 1 ? '' : 's'} (the most this run may take) without a final answer; the last solution:`;
        return { answer: `${limit}\n\n${flow.solution}`, steps: flow.stages, reason: maxLoops === run.options.max_loops ? 'max_loops' : 'max_steps' };
      }
      if (decision.action === 'ASK_USER') {
        const answer = await askQuestion(run, {
          key: `solver.ask:${flow.loop}`,
          step: flow.stages,
          question: decision.question_for_user || 'What should I know to go on?',
          kind: 'question',
        });
        flow.answers.push(answer);
      }
      flow.nextFocus = decision.next_focus;
      flow.input = decision.next_focus
        ? `${problem}\n\nFocus of this loop: ${decision.next_focus}\n\nPrevious evaluation:\n${evaluation}`
        : `${problem}\n\nPrevious evaluation:\n${evaluation}`;
      flow.loop += 1;
      await confirm(run, flow, 'problem_solver', `Run solver loop ${flow.loop}: ${STAGE_WORDS.problem_solver}?`);
    }
  },
});

/** The statement, trimmed: an empty one is refused, and one without a keyword when the option asks for it. */
export function checkProblem(question: string, requireKeyword: boolean): string {
  const problem = question.trim();
  if (!problem) throw new ProblemStatementError('The problem statement is empty: write the problem to solve');
  if (requireKeyword && !KEYWORDS.test(problem)) {
    throw new ProblemStatementError('The problem statement must say "problem", "question" or "research" (the require_keyword option)');
  }
  return problem;
}

/**
 * One stage: started, its call (retried once in auto mode when it fails), finished with its output;
 * then, unless auto-advance, the person confirms the next stage. `next` names it (undefined: none).
 * Returns the output, which becomes the flow's input.
 */
async function stage(run: SolverRun, flow: Workflow, name: SolverStage, next: SolverStage, input = flow.input): Promise<string> {
  const output = await runStage(run, flow, name, input);
  flow.input = output;
  await confirm(run, flow, next, `Go on to ${STAGE_WORDS[next]}?`);
  return output;
}

async function runStage(run: SolverRun, flow: Workflow, name: SolverStage, input: string): Promise<string> {
  flow.stages += 1;
  run.progress.step = flow.stages;
  await run.sink.emit(stageStartEvent({ run_id: run.input.runId }, name, flow.loop));
  const output = await withRetry(run, () => call(run, flow, name, input));
  await run.sink.emit(stageCompleteEvent({ run_id: run.input.runId }, name, flow.loop, output));
  run.progress.transcript.push({ role: 'assistant', content: `[${name}] ${output}` });
  return output;
}

/** In auto mode a failed stage is tried once more; a second failure (or any failure when a person confirms) ends the run. */
async function withRetry<T>(run: SolverRun, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!run.options.auto_advance || isAbortError(error, run.control.signal) || !retryable(error)) throw error;
    run.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'a solver stage failed; trying it once more');
    return attempt();
  }
}

/** The orchestrator's unusable answer, or a request the endpoint refused as such, is final: it is not retried. */
function retryable(error: unknown): boolean {
  return !(error instanceof ModelError && (error.category === 'output' || error.category === 'request'));
}

/** The stage's call: its system prompt, the input as the user's message; the problem solver may use tools first. */
async function call(run: SolverRun, flow: Workflow, name: SolverStage, input: string): Promise<string> {
  const files_manifest = name === 'problem_solver' ? await run.filesManifest() : '';
  const variables = {
    problem: run.input.question.trim(),
    loop: flow.loop,
    max_loops: run.options.max_loops,
    next_focus: flow.nextFocus,
    tool_names: run.input.toolNames,
    files_manifest,
  };
  const messages: LlmMessage[] = [
    { role: 'system', content: run.prompts.render(name, variables) },
    { role: 'user', content: input },
    ...personTurns(flow.heard),
  ];
  const tools = name === 'problem_solver' ? run.tools.schemas(run.input.toolNames) : [];
  for (let round = 1; ; round++) {
    const offer = tools.length > 0 && round <= SOLVER_TOOL_ROUNDS;
    const {
      text,
      toolCalls,
      steers = [],
    } = await run.llm.complete({
      purpose: `solver.${name}`,
      messages,
      signal: run.control.signal,
      variables: { ...variables, stage: name },
      ...(offer ? { tools } : {}),
      onDelta: (delta) => run.sink.preview(run.events.reasonDelta(flow.stages, delta)),
    });
    // A message this call read stays with the stage's later rounds and every later stage.
    flow.heard.push(...steers);
    messages.push(...personTurns(steers));
    if (toolCalls.length === 0 || !offer) return text.trim();
    const records = await runToolCalls(toolCalls, flow.stages, run);
    messages.push(...toolCallMessages(text, records));
  }
}

/** The orchestrator's stage: structured output, logged as agent_decision (a parse failure ends the run). */
async function orchestrate(run: SolverRun, flow: Workflow, input: string): Promise<OrchestratorDecision> {
  flow.stages += 1;
  run.progress.step = flow.stages;
  await run.sink.emit(stageStartEvent({ run_id: run.input.runId }, 'orchestrator', flow.loop));
  const variables = {
    problem: run.input.question.trim(),
    loop: flow.loop,
    max_loops: run.options.max_loops,
    next_focus: flow.nextFocus,
    tool_names: run.input.toolNames,
    files_manifest: '',
  };
  const { parsed, steers = [] } = await run.llm.complete({
    purpose: 'solver.orchestrator',
    messages: [{ role: 'system', content: run.prompts.render('orchestrator', variables) }, { role: 'user', content: input }, ...personTurns(flow.heard)],
    schema: { name: 'orchestrator_decision', zod: OrchestratorDecision },
    signal: run.control.signal,
    variables: { ...variables, stage: 'orchestrator', input },
  });
  const decision = parsed!;
  flow.heard.push(...steers);
  await run.sink.emit(stageCompleteEvent({ run_id: run.input.runId }, 'orchestrator', flow.loop, JSON.stringify(decision, null, 2)));
  await run.sink.emit(decisionEvent({ run_id: run.input.runId }, flow.loop, decision));
  run.progress.transcript.push({ role: 'assistant', content: `[orchestrator] ${decision.action}: ${decision.rationale}` });
  return decision;
}

/** Unless auto-advance, asks the person whether to run the next stage; "No" pauses the run (resume asks again). */
async function confirm(run: SolverRun, flow: Workflow, next: SolverStage, question: string): Promise<void> {
  if (run.options.auto_advance) return;
  const answer = await askQuestion(run, { key: `solver.confirm:${flow.stages}:${next}`, step: flow.stages, question, kind: 'confirm', choices: [YES, NO] }, NO);
  if (answer.trim().toLowerCase() === NO.toLowerCase()) {
    run.control.stop('paused');
    run.control.throwIfStopped();
  }
}
