import type { AgentVerdict } from '@stepwise/shared-types';
import { askQuestion } from '../kernel/ask.ts';
import { oneSentence } from '../kernel/grounding.ts';
import type { RunSuccess } from '../kernel/strategy.ts';
import { verdictEvent } from './research-events.ts';
import { AGENTS, type GraphStage, type GraphTask, nextTaskId, type ResearchState, type Verdict } from './state-doc.ts';
import { type ResearchRun, type TaskResult, VerdictResult } from './research-definition.ts';
import { contextPack, emitGraph, heed, oneLine, progressLine, type StateDocument } from './research-document.ts';

/** The optional check of one task against its acceptance criteria; follow-ups join the stage. */
export async function verifyTask(run: ResearchRun, state: ResearchState, stage: GraphStage, task: GraphTask, result: TaskResult): Promise<string[]> {
  const variables = { ...contextPack(run, state, stage, task), files_manifest: '' };
  const { verdict } = await judge(
    run,
    state,
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
export async function verifyStage(
  run: ResearchRun,
  doc: StateDocument,
  state: ResearchState,
  stage: GraphStage,
  cycle: number,
): Promise<{
  verdict: Verdict;
  added: string[];
  issues: string[];
  /** The follow-up work is the person's: their answer, or a message of theirs the verifier read (it goes on in this run). */
  asked: boolean;
}> {
  const stageResults = state.results.filter((line) => stage.tasks.some((task) => line.startsWith(`- ${task.id} `))).join('\n');
  const variables = { goal: state.goal, stage: `${stage.id}. ${stage.name}`, criteria: stage.verifier_criteria, results: stageResults };
  const { verdict, heard } = await judge(
    run,
    state,
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
  return { verdict: verdict.verdict, added, issues: verdict.issues, asked: asked || heard };
}

/** Follow-up rounds a stage verifier may add by itself; after them it asks the person. */
export const MAX_STAGE_RETRIES = 2;

/**
 * A stage whose verifier still doubts it after MAX_STAGE_RETRIES rounds of follow-up work: a third
 * round would most likely doubt it again, so the person is asked a concrete question (the
 * verifier's first issue) and their answer becomes the one follow-up task (and a line of guidance
 * in the history).
 */
export async function askHowToGoOn(
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

export function shortTitle(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** What a verifier judges: one task (its call is on the task's branch), a stage, or the whole run (both on the run's trunk). */
export type Judged = { scope: 'task'; taskId: string } | { scope: 'stage'; stageId: string } | { scope: 'final' };

/**
 * The verifier's call: the verdict schema, the judged thing named in its variables as `target`.
 * `heard`: the call (on the run's trunk) read a message the person sent the run as a whole.
 */
export async function judge(
  run: ResearchRun,
  state: ResearchState,
  purpose: string,
  judged: Judged,
  system: string,
  content: string,
  variables: Record<string, unknown>,
): Promise<{ verdict: VerdictResult; heard: boolean }> {
  const target = judged.scope === 'task' ? judged.taskId : judged.scope === 'stage' ? `stage:${judged.stageId}` : 'final';
  const { parsed, steers = [] } = await run.llm.complete({
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
  // A task's messages are its own; one for the run as a whole holds for the rest of the project.
  if (judged.scope !== 'task') heed(state, steers);
  return { verdict: parsed!, heard: judged.scope !== 'task' && steers.length > 0 };
}

/** Follow-up tasks into the stage (todo, after its last id); their ids. */
export function addFollowUps(stage: GraphStage, verdict: VerdictResult): string[] {
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

export async function emitVerdict(
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
export async function finish(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number): Promise<RunSuccess> {
  const results = state.results.join('\n');
  const { verdict } = await judge(
    run,
    state,
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
export async function unresolved(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number, issue: string | undefined): Promise<RunSuccess> {
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

export async function blocked(run: ResearchRun, doc: StateDocument, state: ResearchState, cycle: number, why: string): Promise<RunSuccess> {
  state.history.push(`- cycle ${cycle}: blocked: ${why}`);
  await doc.write(state);
  await emitGraph(run, state);
  return {
    answer: `${why} ${progressLine(state)} Send another message to go on (its text joins the history log as guidance).`,
    steps: cycle,
    reason: 'verifier_blocked',
  };
}
