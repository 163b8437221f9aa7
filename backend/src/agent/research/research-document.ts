import type { PersonMessage } from '../common/person-messages.ts';
import { taskGraphEvent } from './research-events.ts';
import { fitState, GraphError, type GraphStage, type GraphTask, parseState, renderState, type ResearchState, STATE_DOC } from './state-doc.ts';
import { BEST_ANSWER_LINES, type ResearchRun, StateDocError, TaskGraphPlan } from './research-definition.ts';

/** The document as the run reads and writes it: reads journaled (a replay sees what the first pass saw), writes one at a time. */
export class StateDocument {
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
export function reopenInterrupted(state: ResearchState): void {
  for (const task of state.graph.stages.flatMap((stage) => stage.tasks)) {
    if (task.status === 'running' || (task.status === 'blocked' && task.blocked_reason?.startsWith('waiting for the user'))) {
      task.status = 'todo';
      delete task.blocked_reason;
    }
  }
}

/**
 * The person's messages to the run as a whole (read by the planner or a verifier) hold for the rest
 * of the project: constraints (every later task's context has them) and lines of its history.
 */
export function heed(state: ResearchState, messages: readonly PersonMessage[]): void {
  for (const message of messages) {
    state.constraints.push(`As the person said during the run: ${oneLine(message.content)}`);
    state.history.push(`- ${new Date().toISOString().slice(0, 16)} message during the run: ${oneLine(message.content)}`);
  }
}

/** A new project: the graph planned by the model, statuses todo, version 1. */
export async function plan(run: ResearchRun): Promise<ResearchState> {
  const goal = run.input.question.trim();
  const manifest = await run.filesManifest();
  const { parsed, steers = [] } = await run.llm.complete({
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
  heed(state, steers);
  try {
    parseState(renderState(state));
  } catch (error) {
    if (error instanceof GraphError) throw new StateDocError(`The planned task graph is not usable: ${error.reason}`);
    throw error;
  }
  return state;
}

/** What a task's calls get: the goal, constraints, its stage and task, the best answer (≤ 200 lines), verifier issues, the results so far; never whole files. */
export function contextPack(run: ResearchRun, state: ResearchState, stage: GraphStage, task: GraphTask) {
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

/** The graph as the web app draws it (taskGraphEvent). */
export async function emitGraph(run: ResearchRun, state: ResearchState): Promise<void> {
  await run.sink.emit(taskGraphEvent({ run_id: run.input.runId }, state.graph));
}

export function progressLine(state: ResearchState): string {
  const tasks = state.graph.stages.flatMap((stage) => stage.tasks);
  const done = tasks.filter((task) => task.status === 'done' || task.status === 'skipped').length;
  const passed = state.graph.stages.filter((stage) => stage.status === 'passed').length;
  return `${done} of ${tasks.length} tasks done, ${passed} of ${state.graph.stages.length} stages passed (see ${STATE_DOC}).`;
}

export function waveSummary(state: ResearchState, wave: GraphTask[]): string {
  const lines = wave.map((task) => state.results.find((line) => line.startsWith(`- ${task.id} `)) ?? `- ${task.id}`);
  return `This wave ran ${wave.map((task) => task.id).join(', ')}:\n\n${lines.join('\n')}\n\n${progressLine(state)} Send another message for the next wave.`;
}

export function bestAnswer(result: string, before: string): string {
  const text = result.trim();
  return text ? text.split('\n').slice(0, BEST_ANSWER_LINES).join('\n') : before;
}

export function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
