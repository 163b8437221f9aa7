import type { LlmMessage } from '../../messages.ts';
import { personTurns } from '../common/person-messages.ts';
import { REQUEST_INPUT_TOOL, requestInputSchema } from '../../tools/request-input-tool.ts';
import { defineStrategy, type RunProgress, type RunSuccess } from '../kernel/strategy.ts';
import { runToolCalls, toolCallMessages } from '../kernel/tool-calls.ts';
import { researchDemo } from './research-demo.ts';
import { taskCompleteEvent, taskStartEvent } from './research-events.ts';
import { currentStage, type GraphStage, type GraphTask, parseState, type ResearchState, runnableWave, STATE_DOC, unfinished } from './state-doc.ts';
import { atStepLimit } from '../kernel/budgets.ts';
import { type ResearchRun, TASK_TOOL_ROUNDS, TaskResult, options, prompts } from './research-definition.ts';
import { bestAnswer, contextPack, StateDocument, emitGraph, oneLine, plan, progressLine, reopenInterrupted, waveSummary } from './research-document.ts';
import { blocked, finish, unresolved, verifyStage, verifyTask } from './research-verdicts.ts';

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
    const kept = new Map<string, KeptTask>();

    for (let cycle = 1; ; cycle++) {
      run.progress.step = cycle;
      if (cycle > 1) state = (await doc.read(`cycle:${cycle}`)) ?? state;
      const stage = currentStage(state.graph);
      if (!stage) return finish(run, doc, state, cycle);
      stage.status = 'running';
      const wave = runnableWave(stage, run.options.max_parallel);
      if (wave.length > 0) {
        state.history.push(`- cycle ${cycle}: wave ${wave.map((task) => task.id).join(', ')} of stage ${stage.id}`);
        const followUps = await runWave(run, doc, state, stage, wave, kept);
        if (followUps.length > 0) return blocked(run, doc, state, cycle, `Task verification asked for follow-up work (${followUps.join(', ')}).`);
        // Tasks a person stopped alone and asked to run again meanwhile go into the next wave.
        if (again(run, state, stage)) {
          await doc.write(state);
          continue;
        }
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
        // From the stage's verdict on, its stopped tasks are as they are.
        for (const task of stage.tasks) if (task.status === 'stopped') run.control.settleBranch(task.id);
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

/** Marks the stopped tasks a person asked to run again as to do; true when there are any. */
function again(run: ResearchRun, state: ResearchState, stage: GraphStage): boolean {
  let any = false;
  for (const id of run.control.takeResumed()) {
    const task = stage.tasks.find((candidate) => candidate.id === id && candidate.status === 'stopped');
    if (!task) continue;
    task.status = 'todo';
    state.history.push(`- ${new Date().toISOString().slice(0, 16)} task ${task.id} run again`);
    any = true;
  }
  return any;
}

/** Runs a wave's tasks side by side; returns the ids of follow-up tasks task verification added. */
async function runWave(
  run: ResearchRun,
  doc: StateDocument,
  state: ResearchState,
  stage: GraphStage,
  wave: GraphTask[],
  kept: Map<string, KeptTask>,
): Promise<string[]> {
  for (const task of wave) task.status = 'running';
  await doc.write(state);
  await emitGraph(run, state);
  const outcomes = await Promise.allSettled(wave.map((task) => runTask(run, doc, state, stage, task, kept)));
  const failure = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failure) throw (failure as PromiseRejectedResult).reason;
  return outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? outcome.value : []));
}

/** Where a task a person stopped alone got to: its messages and its next round, so that running it again repeats no completed call. */
interface KeptTask {
  messages: LlmMessage[];
  round: number;
}

/**
 * One task: its agent's tool loop, then its structured result, saved and written into the
 * document. A person may stop the task alone: its model and tool calls are cut, it ends
 * `stopped` with a stop receipt of its own, and its siblings go on; run again, it goes on from
 * its last completed round.
 */
async function runTask(
  run: ResearchRun,
  doc: StateDocument,
  state: ResearchState,
  stage: GraphStage,
  task: GraphTask,
  kept: Map<string, KeptTask>,
): Promise<string[]> {
  const branch = run.control.branch(task.id);
  const receipt: RunProgress = { step: run.progress.step, transcript: [] };
  try {
    return await taskWork({ ...run, control: branch }, doc, state, stage, task, kept, receipt);
  } catch (error) {
    if (!branch.stopped || run.control.signal.aborted) throw error;
    task.status = 'stopped';
    state.history.push(`- ${new Date().toISOString().slice(0, 16)} task ${task.id} stopped by ${branch.stoppedBy?.name ?? 'the person'}`);
    run.control.stoppedBranch(task.id);
    await run.sink.emit(run.events.node(task.id).nodeStopped(run.progress.step, receipt.stoppedCalls ?? [], branch.stoppedBy));
    await run.sink.emit(taskCompleteEvent({ run_id: run.input.runId }, task, 'Stopped by a person; it may be run again.', 'stopped'));
    await doc.write(state);
    await emitGraph(run, state);
    return [];
  } finally {
    branch.end();
  }
}

async function taskWork(
  run: ResearchRun,
  doc: StateDocument,
  state: ResearchState,
  stage: GraphStage,
  task: GraphTask,
  kept: Map<string, KeptTask>,
  receipt: RunProgress,
): Promise<string[]> {
  const { sink, input } = run;
  const events = run.events.node(task.id);
  await sink.emit(taskStartEvent({ run_id: input.runId }, task));
  const variables = { ...contextPack(run, state, stage, task), files_manifest: await run.filesManifest() };
  const resumed = kept.get(task.id);
  const messages: LlmMessage[] = resumed?.messages ?? [
    { role: 'system', content: run.prompts.render(task.agent, variables) },
    { role: 'user', content: `Task ${task.id}: ${task.title}` },
  ];
  const tools = [...run.tools.schemas(input.toolNames), requestInputSchema];
  for (let round = resumed?.round ?? 1; round <= TASK_TOOL_ROUNDS; round++) {
    const {
      text,
      toolCalls,
      steers = [],
    } = await run.llm.complete({
      purpose: 'research.task',
      nodeId: task.id,
      messages,
      tools,
      signal: run.control.signal,
      variables: { ...variables, task_id: task.id, agent: task.agent },
    });
    // A person's message for this task stays in its conversation for its later calls.
    messages.push(...personTurns(steers));
    if (toolCalls.length === 0) {
      if (text.trim()) messages.push({ role: 'assistant', content: text });
      break;
    }
    const question = toolCalls.find((call) => call.name === REQUEST_INPUT_TOOL);
    if (question) await markBlocked(run, doc, state, task, question.arguments);
    const records = await runToolCalls(toolCalls, round, { ...run, events, nodeId: task.id, progress: receipt });
    if (question) await markRunning(run, doc, state, task);
    messages.push(...toolCallMessages(text, records));
    kept.set(task.id, { messages: [...messages], round: round + 1 });
  }
  const { parsed } = await run.llm.complete({
    purpose: 'research.task_result',
    nodeId: task.id,
    messages: [{ role: 'system', content: run.prompts.render('task_result', variables) }, ...messages.slice(1)],
    schema: { name: 'task_result', zod: TaskResult },
    signal: run.control.signal,
    variables: { ...variables, task_id: task.id, agent: task.agent },
  });
  kept.delete(task.id);
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
