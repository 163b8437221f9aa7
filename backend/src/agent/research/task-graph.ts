import { z } from 'zod';
import { parseTaskId, STAGE_ID, TASK_ID, taskId } from './task-id.ts';

/** The research project's state document, a session file: the source of truth between runs. */
export const STATE_DOC = 'RESEARCH_STATE.md';
/** The most tasks a task graph may hold (see STATE_DOC_MAX_BYTES for the document's other bounds). */
export const STATE_DOC_MAX_TASKS = 500;

/** A task graph: its statuses, tasks and stages, the checks a graph passes, and which tasks run next. */
export const TaskStatus = z.enum(['todo', 'running', 'done', 'blocked', 'skipped', 'superseded', 'stopped']);
export type TaskStatus = z.infer<typeof TaskStatus>;

export const StageStatus = z.enum(['todo', 'running', 'passed', 'blocked']);
export type StageStatus = z.infer<typeof StageStatus>;

export const Verdict = z.enum(['PASS', 'CONDITIONAL', 'FAIL']);
export type Verdict = z.infer<typeof Verdict>;

export const AGENTS = ['literature_scout', 'paper_reader', 'derivation_coder', 'verifier', 'orchestrator'] as const;

export const AgentName = z.enum(AGENTS);
export type AgentName = z.infer<typeof AgentName>;

export const list = z.array(z.string()).default([]);

export const GraphTask = z
  .object({
    id: z.string().regex(TASK_ID, 'a task id is STAGE.N, e.g. "1.2"'),
    title: z.string().min(1),
    agent: AgentName,
    status: TaskStatus.default('todo'),
    depends_on: list,
    parallel_group: z.string().optional(),
    acceptance_criteria: list,
    inputs: list,
    outputs: list,
    blocked_reason: z.string().optional(),
    skip_reason: z.string().optional(),
    superseded_by: z.string().optional(),
  })
  .strict();

export type GraphTask = z.infer<typeof GraphTask>;

export const GraphStage = z
  .object({
    id: z.string().regex(STAGE_ID, 'a stage id is a number, e.g. "1"'),
    name: z.string().min(1),
    status: StageStatus.default('todo'),
    verdict: Verdict.optional(),
    verifier_criteria: list,
    tasks: z.array(GraphTask),
  })
  .strict();

export type GraphStage = z.infer<typeof GraphStage>;

export const TaskGraph = z
  .object({ version: z.number().int().positive().default(1), stages: z.array(GraphStage).min(1) })
  .strict()
  .refine(
    (graph) => graph.stages.reduce((sum, stage) => sum + stage.tasks.length, 0) <= STATE_DOC_MAX_TASKS,
    `a task graph holds at most ${STATE_DOC_MAX_TASKS} tasks`,
  );

export type TaskGraph = z.infer<typeof TaskGraph>;

/** Why a graph cannot be used: the path of the offending value and, in a document, its line. */
export class GraphError extends Error {
  constructor(
    readonly reason: string,
    readonly path: (string | number)[],
    readonly line?: number,
  ) {
    super(`${STATE_DOC}${line ? ` line ${line}` : ''}: ${path.length ? `${path.join('.')}: ` : ''}${reason}`);
  }
}

/** The rules zod cannot say: ids unique and in their stage, dependencies inside the stage and acyclic, reasons where a status needs one. */
export function checkGraph(graph: TaskGraph): void {
  const stageIds = new Set<string>();
  graph.stages.forEach((stage, s) => {
    if (stageIds.has(stage.id)) throw new GraphError(`stage id "${stage.id}" is used twice`, ['stages', s, 'id']);
    stageIds.add(stage.id);
    const ids = new Set<string>();
    stage.tasks.forEach((task, t) => {
      const at = ['stages', s, 'tasks', t];
      if (ids.has(task.id)) throw new GraphError(`task id "${task.id}" is used twice`, [...at, 'id']);
      ids.add(task.id);
      if (parseTaskId(task.id)?.stage !== stage.id)
        throw new GraphError(`task "${task.id}" is not in stage ${stage.id} (its id must start with "${stage.id}.")`, [...at, 'id']);
      if (task.status === 'blocked' && !task.blocked_reason?.trim())
        throw new GraphError(`task "${task.id}" is blocked without a blocked_reason`, [...at, 'status']);
      if (task.status === 'skipped' && !task.skip_reason?.trim()) throw new GraphError(`task "${task.id}" is skipped without a skip_reason`, [...at, 'status']);
      if (task.status === 'superseded' && !task.superseded_by?.trim())
        throw new GraphError(`task "${task.id}" is superseded without superseded_by`, [...at, 'status']);
    });
    stage.tasks.forEach((task, t) => {
      for (const [d, dependency] of task.depends_on.entries()) {
        if (!ids.has(dependency))
          throw new GraphError(`task "${task.id}" depends on "${dependency}", which is not a task of stage ${stage.id}`, [
            'stages',
            s,
            'tasks',
            t,
            'depends_on',
            d,
          ]);
      }
    });
    const cycle = findCycle(stage.tasks);
    if (cycle) throw new GraphError(`the dependencies of stage ${stage.id} go round in a circle: ${cycle.join(' → ')}`, ['stages', s, 'tasks']);
  });
}

export function findCycle(tasks: GraphTask[]): string[] | undefined {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const dependency of byId.get(id)?.depends_on ?? []) {
      const found = visit(dependency);
      if (found) return found;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const task of tasks) {
    const found = visit(task.id);
    if (found) return found;
  }
  return undefined;
}

/** Tasks of a stage not yet finished (done, skipped and superseded are finished). */
export function unfinished(stage: GraphStage): GraphTask[] {
  return stage.tasks.filter((task) => task.status === 'todo' || task.status === 'running' || task.status === 'blocked');
}

/** The lowest stage that has not passed. */
export function currentStage(graph: TaskGraph): GraphStage | undefined {
  return graph.stages.find((stage) => stage.status !== 'passed');
}

/** The stage's runnable wave: todo tasks whose dependencies are all done or skipped, at most `max`. */
export function runnableWave(stage: GraphStage, max: number): GraphTask[] {
  const finished = new Set(stage.tasks.filter((task) => task.status === 'done' || task.status === 'skipped').map((task) => task.id));
  return stage.tasks.filter((task) => task.status === 'todo' && task.depends_on.every((id) => finished.has(id))).slice(0, max);
}

/** The next free task id of a stage ("1.4" after 1.1–1.3). */
export function nextTaskId(stage: GraphStage): string {
  const highest = Math.max(0, ...stage.tasks.map((task) => parseTaskId(task.id)?.n ?? 0));
  return taskId(stage.id, highest + 1);
}
