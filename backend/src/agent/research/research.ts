import type { AgentVerdict } from '@stepwise/shared-types';
import { z } from 'zod';
import { ERROR_CODE, StepwiseError } from '../../errors.ts';
import type { LlmMessage } from '../../messages.ts';
import { REQUEST_INPUT_TOOL, requestInputSchema } from '../../tools/request-input-tool.ts';
import { askQuestion } from '../kernel/ask.ts';
import { oneSentence } from '../kernel/grounding.ts';
import { defineStrategy, type Run, type RunSuccess } from '../kernel/strategy.ts';
import { runToolCalls, toolCallMessages } from '../kernel/tool-calls.ts';
import { researchDemo } from './research-demo.ts';
import { taskCompleteEvent, taskGraphEvent, taskStartEvent, verdictEvent } from './research-events.ts';
import {
  AGENTS,
  AgentName,
  currentStage,
  fitState,
  GraphError,
  type GraphStage,
  type GraphTask,
  nextTaskId,
  parseState,
  renderState,
  type ResearchState,
  runnableWave,
  STATE_DOC,
  unfinished,
  Verdict,
} from './state-doc.ts';
import { atStepLimit } from '../kernel/budgets.ts';

const agentSample = {
  goal: 'g',
  constraints: [] as string[],
  stage: 's',
  task: 't',
  acceptance_criteria: [] as string[],
  best_answer: '',
  issues: [] as string[],
  results: '',
  tool_names: ['calculator'],
  files_manifest: '',
};
/** The templates in prompts/research/: the planner, one per agent, the verifiers and the report. */
const prompts = {
  plan: { goal: 'g', files_manifest: '' },
  literature_scout: agentSample,
  paper_reader: agentSample,
  derivation_coder: agentSample,
  verifier: agentSample,
  orchestrator: agentSample,
  task_result: agentSample,
  task_verifier: agentSample,
  stage_verifier: { goal: 'g', stage: 's', criteria: [] as string[], results: '' },
  final_verifier: { goal: 'g', results: '', best_answer: '' },
  report: { goal: 'g', results: '', evidence: '' },
};

const options = z
  .object({
    mode: z.enum(['run', 'step']).default('run').describe('run: cycle until an answer or a verifier blocks; step: one wave per message'),
    task_verification: z.boolean().default(false).describe('Check each task against its acceptance criteria'),
    max_parallel: z.number().int().min(1).max(8).default(4).describe('Most tasks of a wave running at once'),
  })
  .strict();

type ResearchRun = Run<z.infer<typeof options>, typeof prompts>;

/** Schema `task_graph`: the plan of a new project. */
export const TaskGraphPlan = z.object({
  // A stage at least, each with a task at least, on the wire as in the graph's check: an empty graph is asked for again.
  stages: z
    .array(
      z.object({
        id: z.string().min(1),
        name: z.string(),
        verifier_criteria: z.array(z.string()),
        tasks: z
          .array(
            z.object({
              id: z.string().min(1),
              title: z.string().min(1),
              agent: AgentName,
              depends_on: z.array(z.string()),
              acceptance_criteria: z.array(z.string()),
              inputs: z.array(z.string()),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});
/** Schema `task_result`: what a task hands back. */
export const TaskResult = z.object({
  summary: z.string(),
  result: z.string(),
  evidence: z.array(z.object({ source: z.string(), location: z.string() })),
  artifacts: z.array(z.object({ name: z.string(), content: z.string() })),
});
export type TaskResult = z.infer<typeof TaskResult>;
/** Schema `verdict`: a verifier's judgement. */
export const VerdictResult = z.object({
  verdict: Verdict,
  issues: z.array(z.string()),
  follow_up_tasks: z.array(z.object({ title: z.string(), agent: AgentName, acceptance_criteria: z.array(z.string()) })),
});
export type VerdictResult = z.infer<typeof VerdictResult>;

/** Tool rounds a task may take before it must hand back its result. */
const TASK_TOOL_ROUNDS = 6;
const BEST_ANSWER_LINES = 200;

/** An edit of the state document the run cannot use: the run ends naming the line and the reason. */
export class StateDocError extends StepwiseError {
  constructor(message: string) {
    super(ERROR_CODE.invalidMessage, message);
  }
}

/**
 * Research as a task graph (seed 004). The chat is the project; its state document
 * RESEARCH_STATE.md is the source of truth. The first message plans the graph; each cycle re-reads
 * and checks the document, runs the lowest unfinished stage's runnable tasks in parallel (each an
 * agent in a tool loop ending with a structured result), writes results and evidence back, and
 * has a verifier judge the stage: follow-up tasks and `verifier_blocked`, or the next stage; after
 * the last, the final verifier and the report.
 */
export const research = defineStrategy({
  name: 'research',
  label: 'Research (task graph)',
  description: 'Plans a graph of tasks in stages, runs each stage’s tasks in parallel, and has verifiers check the work.',
  options,
  prompts,
  demo: researchDemo,
  session: {
    // The state document: an edit that breaks its graph is refused with the line and the reason.
    fileChecks: { [STATE_DOC]: (text) => void parseState(text) },
  },
  async run(run: ResearchRun): Promise<RunSuccess> {
    const { input } = run;
    const doc = new StateDocument(run);
    let state = await doc.read('start');
    if (!state) {
      state = await plan(run);
      await doc.write(state);
    } else {
      reopenInterrupted(state);
      state.history.push(`- ${new Date().toISOString().slice(0, 16)} guidance: ${input.question.replace(/\s+/g, ' ').trim()}`);
      await doc.write(state);
    }
    await emitGraph(run, state);

    for (let cycle = 1; ; cycle++) {
      run.progress.step = cycle;
      if (cycle > 1) state = (await doc.read(`cycle:${cycle}`)) ?? state;
      const stage = currentStage(state.graph);
      if (!stage) return finish(run, doc, state, cycle);
      stage.status = 'running';
      const wave = runnableWave(stage, run.options.max_parallel);
      if (wave.length > 0) {
        state.history.push(`- cycle ${cycle}: wave ${wave.map((task) => task.id).join(', ')} of stage ${stage.id}`);
        const followUps = await runWave(run, doc, state, stage, wave);
        if (followUps.length > 0) return blocked(run, doc, state, cycle, `Task verification asked for follow-up work (${followUps.join(', ')}).`);
        if (run.options.mode === 'step') {
          await doc.write(state);
          return { answer: waveSummary(state, wave), steps: cycle, reason: 'wave_complete' };
        }
      } else if (unfinished(stage).length > 0) {
        return blocked(
          run,
          doc,
          state,
          cycle,
          `Stage ${stage.id} has tasks that cannot run (${unfinished(stage)
            .map((task) => `${task.id} ${task.status}`)
            .join(', ')}).`,
        );
      }
      if (unfinished(stage).length === 0) {
        const judged = await verifyStage(run, doc, state, stage, cycle);
        // Doubts with no work that could settle them: the request cannot be done here, and the run says why.
        if (judged.verdict !== 'PASS' && judged.added.length === 0) return unresolved(run, doc, state, cycle, judged.issues[0]);
        // Follow-up work the person directed goes on in this run; work the verifier added waits for the person to go on.
        if (judged.verdict !== 'PASS' && !judged.asked)
          return blocked(run, doc, state, cycle, `The verifier of stage ${stage.id} said ${judged.verdict}; follow-up tasks were added.`);
      }
      if (atStepLimit(cycle, input)) {
        await doc.write(state);
        return {
          answer: `I stopped after ${cycle} cycles (the most this run may take). ${progressLine(state)} Send another message to go on.`,
          steps: cycle,
          reason: 'max_cycles',
        };
      }
    }
  },
});

/** The document as the run reads and writes it: reads journaled (a replay sees what the first pass saw), writes one at a time. */
class StateDocument {
  private writing: Promise<void> = Promise.resolve();
  constructor(private readonly run: ResearchRun) {}

  async read(key: string): Promise<ResearchState | undefined> {
    const { value } = await this.run.effects.once('research_doc', key, async () => (await this.run.files.read(STATE_DOC)) ?? null);
    if (value === null) return undefined;
    try {
      return parseState(value);
    } catch (error) {
      if (error instanceof GraphError)
        throw new StateDocError(`${error.message}. Nothing was changed; fix the document (or delete it to start over) and send the message again.`);
      throw error;
    }
  }

  /** Writes the state, its ledgers trimmed first when the document would not fit (it must always read back). */
  write(state: ResearchState): Promise<void> {
    let text: string;
    try {
      text = renderState(fitState(state));
    } catch (error) {
      if (error instanceof GraphError) return Promise.reject(new StateDocError(`The research state cannot be saved: ${error.reason}`));
      throw error;
    }
    this.writing = this.writing.then(() => this.run.files.write(STATE_DOC, text));
    return this.writing;
  }
}

/**
 * Tasks an earlier run left running, or waiting for an answer it never got (it was stopped), are
 * to do again: their work did not reach the document.
 */
function reopenInterrupted(state: ResearchState): void {
  for (const task of state.graph.stages.flatMap((stage) => stage.tasks)) {
    if (task.status === 'running' || (task.status === 'blocked' && task.blocked_reason?.startsWith('waiting for the user'))) {
      task.status = 'todo';
      delete task.blocked_reason;
    }
  }
}

/** A new project: the graph planned by the model, statuses todo, version 1. */
async function plan(run: ResearchRun): Promise<ResearchState> {
  const goal = run.input.question.trim();
  const manifest = await run.filesManifest();
  const { parsed } = await run.llm.complete({
    purpose: 'research.plan',
    messages: [
      { role: 'system', content: run.prompts.render('plan', { goal, files_manifest: manifest }) },
      { role: 'user', content: goal },
    ],
    schema: { name: 'task_graph', zod: TaskGraphPlan },
    signal: run.control.signal,
    variables: { goal, tool_names: run.input.toolNames, files_manifest: manifest },
  });
  const graph = {
    version: 1,
    stages: parsed!.stages.map((stage) => ({
      ...stage,
      status: 'todo' as const,
      tasks: stage.tasks.map((task) => ({ ...task, status: 'todo' as const, outputs: [] })),
    })),
  };
  // The model's graph is checked like a person's edit: a bad plan ends the run with the reason.
  const state: ResearchState = {
    goal,
    constraints: [],
    bestAnswer: '',
    graph,
    results: [],
    evidence: [],
    verifier: [],
    history: [`- ${new Date().toISOString().slice(0, 16)} planned: ${graph.stages.length} stages`],
  };
  try {
    parseState(renderState(state));
  } catch (error) {
    if (error instanceof GraphError) throw new StateDocError(`The planned task graph is not usable: ${error.reason}`);
    throw error;
  }
  return state;
}

/** Runs a wave's tasks side by side; returns the ids of follow-up tasks task verification added. */
async function runWave(run: ResearchRun, doc: StateDocument, state: ResearchState, stage: GraphStage, wave: GraphTask[]): Promise<string[]> {
  for (const task of wave) task.status = 'running';
  await doc.write(state);
  await emitGraph(run, state);
  const outcomes = await Promise.allSettled(wave.map((task) => runTask(run, doc, state, stage, task)));
  const failure = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failure) throw (failure as PromiseRejectedResult).reason;
  return outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? outcome.value : []));
}

/** One task: its agent's tool loop, then its structured result, saved and written into the document. */
async function runTask(run: ResearchRun, doc: StateDocument, state: ResearchState, stage: GraphStage, task: GraphTask): Promise<string[]> {
  const { sink, input } = run;
  const events = run.events.node(task.id);
  await sink.emit(taskStartEvent({ run_id: input.runId }, task));
  const variables = { ...contextPack(run, state, stage, task), files_manifest: await run.filesManifest() };
  const messages: LlmMessage[] = [
    { role: 'system', content: run.prompts.render(task.agent, variables) },
    { role: 'user', content: `Task ${task.id}: ${task.title}` },
  ];
  const tools = [...run.tools.schemas(input.toolNames), requestInputSchema];
  for (let round = 1; round <= TASK_TOOL_ROUNDS; round++) {
    const { text, toolCalls } = await run.llm.complete({
      purpose: 'research.task',
      nodeId: task.id,
      messages,
      tools,
      signal: run.control.signal,
      variables: { ...variables, task_id: task.id, agent: task.agent },
    });
    if (toolCalls.length === 0) {
      if (text.trim()) messages.push({ role: 'assistant', content: text });
      break;
    }
    const question = toolCalls.find((call) => call.name === REQUEST_INPUT_TOOL);
    if (question) await markBlocked(run, doc, state, task, question.arguments);
    const records = await runToolCalls(toolCalls, round, { ...run, events, nodeId: task.id });
    if (question) await markRunning(run, doc, state, task);
    messages.push(...toolCallMessages(text, records));
  }
  const { parsed } = await run.llm.complete({
    purpose: 'research.task_result',
    nodeId: task.id,
    messages: [{ role: 'system', content: run.prompts.render('task_result', variables) }, ...messages.slice(1)],
    schema: { name: 'task_result', zod: TaskResult },
    signal: run.control.signal,
    variables: { ...variables, task_id: task.id, agent: task.agent },
  });
  const result = parsed!;
  await saveResult(run, task, result);
  task.status = 'done';
  task.outputs = [`task-${task.id}.json`, ...(await saveArtifacts(run, state, task, result))];
  state.results.push(`- ${task.id} (${task.agent}): ${oneLine(result.summary)}`);
  for (const item of result.evidence) state.evidence.push(`- ${task.id}: ${oneLine(item.source)}${item.location ? ` — ${oneLine(item.location)}` : ''}`);
  state.bestAnswer = bestAnswer(result.result, state.bestAnswer);
  await sink.emit(taskCompleteEvent({ run_id: input.runId }, task, result.summary));
  let followUps: string[] = [];
  if (run.options.task_verification) followUps = await verifyTask(run, state, stage, task, result);
  await doc.write(state);
  await emitGraph(run, state);
  return followUps;
}

/** A task waiting for a person is blocked, the question its reason, in the document and the graph, until answered. */
async function markBlocked(run: ResearchRun, doc: StateDocument, state: ResearchState, task: GraphTask, args: string): Promise<void> {
  let asked = '';
  try {
    asked = String((JSON.parse(args) as { question?: unknown }).question ?? '');
  } catch {
    // The tool call reports the bad arguments itself.
  }
  task.status = 'blocked';
  task.blocked_reason = `waiting for the user's answer${asked ? `: ${oneLine(asked)}` : ''}`;
  await doc.write(state);
  await emitGraph(run, state);
}

async function markRunning(run: ResearchRun, doc: StateDocument, state: ResearchState, task: GraphTask): Promise<void> {
  task.status = 'running';
  delete task.blocked_reason;
  await doc.write(state);
  await emitGraph(run, state);
}

/** What a task's calls get: the goal, constraints, its stage and task, the best answer (≤ 200 lines), verifier issues, the results so far; never whole files. */
function contextPack(run: ResearchRun, state: ResearchState, stage: GraphStage, task: GraphTask) {
  return {
    goal: state.goal,
    constraints: state.constraints,
    stage: `${stage.id}. ${stage.name}: ${stage.tasks.map((other) => `${other.id} ${other.title} (${other.status})`).join('; ')}`,
    task: `${task.id} ${task.title}`,
    acceptance_criteria: task.acceptance_criteria,
    best_answer: state.bestAnswer.split('\n').slice(0, BEST_ANSWER_LINES).join('\n'),
    issues: state.verifier.slice(-10),
    results: state.results.slice(-30).join('\n'),
    tool_names: run.input.toolNames,
  };
}

/** task-ID.json, the task's whole result. */
async function saveResult(run: ResearchRun, task: GraphTask, result: TaskResult): Promise<void> {
  await run.files.write(`task-${task.id}.json`, `${JSON.stringify({ task: task.id, title: task.title, agent: task.agent, ...result }, null, 2)}\n`);
}

/**
 * Each artifact as a session file in the task's own namespace (`artifact-TASK-NAME`), so none can
 * replace the state document, another task's files or anything else of the session. An artifact
 * that cannot be saved (a bad name, the session's file limit) is left out and said in the history
 * log and the run's log; the task's other work stands. Returns the names saved.
 */
async function saveArtifacts(run: ResearchRun, state: ResearchState, task: GraphTask, result: TaskResult): Promise<string[]> {
  const saved: string[] = [];
  for (const artifact of result.artifacts) {
    const name = artifactName(task.id, artifact.name);
    try {
      await run.files.write(name, artifact.content);
      saved.push(name);
    } catch (error) {
      if (run.control.signal.aborted) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      run.logger.warn({ task: task.id, artifact: name.slice(0, 200), reason }, 'a research artifact was not saved');
      state.history.push(
        `- ${new Date().toISOString().slice(0, 16)} artifact "${oneLine(artifact.name).slice(0, 80)}" of task ${task.id} not saved: ${oneLine(reason)}`,
      );
    }
  }
  return saved;
}

/** An artifact's file name: the task's prefix, then its own name with separators and control characters replaced. */
export function artifactName(taskId: string, name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  const plain = name.replace(/[/\\\u0000-\u001f\u007f]/g, '_').trim();
  return `artifact-${taskId}-${plain || 'unnamed'}`;
}

/** The optional check of one task against its acceptance criteria; follow-ups join the stage. */
async function verifyTask(run: ResearchRun, state: ResearchState, stage: GraphStage, task: GraphTask, result: TaskResult): Promise<string[]> {
  const variables = { ...contextPack(run, state, stage, task), files_manifest: '' };
  const verdict = await judge(
    run,
    'research.task_verifier',
    { scope: 'task', taskId: task.id },
    run.prompts.render('task_verifier', variables),
    `Task ${task.id}: ${task.title}\n\nResult:\n${result.result}`,
    variables,
  );
  const added = addFollowUps(stage, verdict);
  await emitVerdict(run, state, 'task', task.id, verdict, added);
  return verdict.verdict === 'PASS' ? [] : added;
}

/** The stage verifier, once every task of the stage is finished. */
async function verifyStage(
  run: ResearchRun,
  doc: StateDocument,
  state: ResearchState,
  stage: GraphStage,
  cycle: number,
): Promise<{ verdict: Verdict; added: string[]; issues: string[]; asked: boolean }> {
  const stageResults = state.results.filter((line) => stage.tasks.some((task) => line.startsWith(`- ${task.id} `))).join('\n');
  const variables = { goal: state.goal, stage: `${stage.id}. ${stage.name}`, criteria: stage.verifier_criteria, results: stageResults };
  const verdict = await judge(
    run,
    'research.stage_verifier',
    { scope: 'stage', stageId: stage.id },
    run.prompts.render('stage_verifier', variables),
    `Stage ${stage.id} results:\n${stageResults}`,
    variables,
  );
  stage.verdict = verdict.verdict;
  const retried = state.verifier.filter((line) => line.startsWith(`- stage ${stage.id}: `) && line.includes('(follow-ups ')).length;
  const asked = verdict.verdict !== 'PASS' && retried >= MAX_STAGE_RETRIES;
  const added = verdict.verdict === 'PASS' ? [] : asked ? await askHowToGoOn(run, state, stage, verdict, retried, cycle) : addFollowUps(stage, verdict);
  stage.status = verdict.verdict === 'PASS' ? 'passed' : 'running';
  await emitVerdict(run, state, 'stage', stage.id, verdict, added);
  await doc.write(state);
  await emitGraph(run, state);
  return { verdict: verdict.verdict, added, issues: verdict.issues, asked };
}

/** Follow-up rounds a stage verifier may add by itself; after them it asks the person. */
const MAX_STAGE_RETRIES = 2;

/**
 * A stage whose verifier still doubts it after MAX_STAGE_RETRIES rounds of follow-up work: a third
 * round would most likely doubt it again, so the person is asked a concrete question (the
 * verifier's first issue) and their answer becomes the one follow-up task (and a line of guidance
 * in the history).
 */
async function askHowToGoOn(
  run: ResearchRun,
  state: ResearchState,
  stage: GraphStage,
  verdict: VerdictResult,
  retried: number,
  cycle: number,
): Promise<string[]> {
  const issue = oneSentence(verdict.issues[0] ?? 'The results still do not settle what the stage is for.');
  const question = `Stage ${stage.id} (${stage.name}) was redone ${retried} times and its verifier still doubts it: ${issue} How should I go on?`;
  const answer = (await askQuestion(run, { key: `stage-verifier:${stage.id}:${retried}`, step: cycle, question, kind: 'question' })).trim();
  state.history.push(`- ${new Date().toISOString().slice(0, 16)} guidance on stage ${stage.id}: ${answer.replace(/\s+/g, ' ')}`);
  const agent = verdict.follow_up_tasks[0]?.agent ?? 'verifier';
  return addFollowUps(stage, { ...verdict, follow_up_tasks: [{ title: `As the person said: ${shortTitle(answer)}`, agent, acceptance_criteria: [answer] }] });
}

function shortTitle(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** What a verifier judges: one task (its call is on the task's branch), a stage, or the whole run (both on the run's trunk). */
type Judged = { scope: 'task'; taskId: string } | { scope: 'stage'; stageId: string } | { scope: 'final' };

/** The verifier's call: the verdict schema, the judged thing named in its variables as `target`. */
async function judge(
  run: ResearchRun,
  purpose: string,
  judged: Judged,
  system: string,
  content: string,
  variables: Record<string, unknown>,
): Promise<VerdictResult> {
  const target = judged.scope === 'task' ? judged.taskId : judged.scope === 'stage' ? `stage:${judged.stageId}` : 'final';
  const { parsed } = await run.llm.complete({
    purpose,
    ...(judged.scope === 'task' ? { nodeId: judged.taskId } : {}),
    messages: [
      { role: 'system', content: system },
      { role: 'user', content },
    ],
    schema: { name: 'verdict', zod: VerdictResult },
    signal: run.control.signal,
    variables: { ...variables, target },
  });
  return parsed!;
}

/** Follow-up tasks into the stage (todo, after its last id); their ids. */
function addFollowUps(stage: GraphStage, verdict: VerdictResult): string[] {
  return verdict.follow_up_tasks.map((followUp) => {
    const id = nextTaskId(stage);
    const agent = (AGENTS as readonly string[]).includes(followUp.agent) ? followUp.agent : 'verifier';
    stage.tasks.push({
      id,
      title: followUp.title,
      agent,
      status: 'todo',
      depends_on: [],
      acceptance_criteria: followUp.acceptance_criteria,
      inputs: [],
      outputs: [],
    });
    return id;
  });
}

async function emitVerdict(
  run: ResearchRun,
  state: ResearchState,
  scope: AgentVerdict['scope'],
  target: string,
  verdict: VerdictResult,
  followUps: string[],
): Promise<void> {
  // "final final" said nothing twice: the final verdict is named once.
  const judged = scope === 'final' ? 'final' : `${scope} ${target}`;
  state.verifier.push(
    `- ${judged}: ${verdict.verdict}${verdict.issues.length ? ` — ${verdict.issues.map(oneLine).join('; ')}` : ''}${followUps.length ? ` (follow-ups ${followUps.join(', ')})` : ''}`,
  );
  state.history.push(`- verdict on ${judged}: ${verdict.verdict}`);
  await run.sink.emit(verdictEvent({ run_id: run.input.runId }, scope, target, verdict, followUps));
}

/** After the last stage: the final verifier, then the report (final_report.md, final_output.md). */
async function finish(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number): Promise<RunSuccess> {
  const results = state.results.join('\n');
  const verdict = await judge(
    run,
    'research.final_verifier',
    { scope: 'final' },
    run.prompts.render('final_verifier', { goal: state.goal, results, best_answer: state.bestAnswer }),
    `Goal: ${state.goal}\n\nResults:\n${results}`,
    { goal: state.goal, results },
  );
  await emitVerdict(run, state, 'final', 'final', verdict, []);
  if (verdict.verdict !== 'PASS') {
    const stage = state.graph.stages.at(-1)!;
    const added = addFollowUps(stage, verdict);
    stage.status = 'running';
    if (added.length === 0) return unresolved(run, doc, state, cycle, verdict.issues[0]);
    return blocked(
      run,
      doc,
      state,
      cycle,
      `The final verifier said ${verdict.verdict}${added.length ? `; follow-up tasks ${added.join(', ')} were added` : ''}.`,
    );
  }
  const evidence = state.evidence.join('\n');
  const { text } = await run.llm.complete({
    purpose: 'research.report',
    messages: [
      { role: 'system', content: run.prompts.render('report', { goal: state.goal, results, evidence }) },
      { role: 'user', content: state.goal },
    ],
    signal: run.control.signal,
    variables: { goal: state.goal, results, evidence },
  });
  const report = text.trim();
  await run.files.write('final_report.md', `${report}\n`);
  await run.files.write('final_output.md', `${state.bestAnswer || report}\n`);
  state.history.push('- final verifier PASS; report written to final_report.md');
  await doc.write(state);
  return { answer: report, steps: cycle, reason: 'answered' };
}

/** The run ends without an answer: a verifier's doubt that no follow-up work can settle, said in one sentence. */
async function unresolved(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number, issue: string | undefined): Promise<RunSuccess> {
  const why = oneSentence(issue ?? 'The verifier found that the results do not answer the goal.');
  state.history.push(`- cycle ${cycle}: could not answer: ${why}`);
  await doc.write(state);
  await emitGraph(run, state);
  return {
    answer: `**Could not answer:** ${why}\n\n${progressLine(state)} Send another message to go on (its text joins the history log as guidance).`,
    steps: cycle,
    reason: 'unresolved',
    summary: why,
  };
}

async function blocked(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number, why: string): Promise<RunSuccess> {
  state.history.push(`- cycle ${cycle}: blocked: ${why}`);
  await doc.write(state);
  await emitGraph(run, state);
  return {
    answer: `${why} ${progressLine(state)} Send another message to go on (its text joins the history log as guidance).`,
    steps: cycle,
    reason: 'verifier_blocked',
  };
}

/** The graph as the web app draws it (taskGraphEvent). */
async function emitGraph(run: ResearchRun, state: ResearchState): Promise<void> {
  await run.sink.emit(taskGraphEvent({ run_id: run.input.runId }, state.graph));
}

function progressLine(state: ResearchState): string {
  const tasks = state.graph.stages.flatMap((stage) => stage.tasks);
  const done = tasks.filter((task) => task.status === 'done' || task.status === 'skipped').length;
  const passed = state.graph.stages.filter((stage) => stage.status === 'passed').length;
  return `${done} of ${tasks.length} tasks done, ${passed} of ${state.graph.stages.length} stages passed (see ${STATE_DOC}).`;
}

function waveSummary(state: ResearchState, wave: GraphTask[]): string {
  const lines = wave.map((task) => state.results.find((line) => line.startsWith(`- ${task.id} `)) ?? `- ${task.id}`);
  return `This wave ran ${wave.map((task) => task.id).join(', ')}:\n\n${lines.join('\n')}\n\n${progressLine(state)} Send another message for the next wave.`;
}

function bestAnswer(result: string, before: string): string {
  const text = result.trim();
  return text ? text.split('\n').slice(0, BEST_ANSWER_LINES).join('\n') : before;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
