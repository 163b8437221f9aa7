import type { AgentTaskComplete, AgentTaskGraph, AgentTaskStart, AgentVerdict } from '@stepwise/shared-types';
import { type GraphTask, STATE_DOC, type TaskGraph, type Verdict } from './state-doc.ts';

/** research's own events (PROTOCOL.md "research"), typed, stamped with the run's id. */

type Stamp = { run_id: string };

/** A task started, on its own branch (the task's id), with its agent. */
export function taskStartEvent(stamp: Stamp, task: GraphTask): Omit<AgentTaskStart, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_task_start', ...stamp, node_id: task.id, task_id: task.id, agent: task.agent };
}

/** A task done, on its branch, with its result's summary. */
export function taskCompleteEvent(stamp: Stamp, task: GraphTask, summary: string, status: 'done' | 'stopped' = 'done'): Omit<AgentTaskComplete, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_task_complete', ...stamp, node_id: task.id, task_id: task.id, status, summary };
}

/** A verifier's judgement of a task, a stage or the whole run, with the follow-up tasks it added. */
export function verdictEvent(
  stamp: Stamp,
  scope: AgentVerdict['scope'],
  target: string,
  judgement: { verdict: Verdict; issues: string[] },
  followUps: string[],
): Omit<AgentVerdict, 'seq' | 'ts'> {
  return {
    type: 'agent_update',
    update_type: 'agent_verdict',
    ...stamp,
    scope,
    target,
    verdict: judgement.verdict,
    issues: judgement.issues,
    follow_up_task_ids: followUps,
  };
}

/** A title or name on the wire: the graph event stays small (at most STATE_DOC_MAX_TASKS tasks of this much), the document keeps it whole. */
const GRAPH_EVENT_TEXT_MAX_CHARS = 200;
const short = (text: string) => (text.length > GRAPH_EVENT_TEXT_MAX_CHARS ? `${text.slice(0, GRAPH_EVENT_TEXT_MAX_CHARS)}…` : text);

/** The graph as the web app draws it: each stage and task, bounded in size (the whole is in the document). */
export function taskGraphEvent(stamp: Stamp, graph: TaskGraph): Omit<AgentTaskGraph, 'seq' | 'ts'> {
  return {
    type: 'agent_update',
    update_type: 'agent_task_graph',
    ...stamp,
    doc: STATE_DOC,
    version: graph.version,
    stages: graph.stages.map((stage) => ({
      id: stage.id,
      name: short(stage.name),
      status: stage.status,
      ...(stage.verdict ? { verdict: stage.verdict } : {}),
      tasks: stage.tasks.map((task) => ({ id: task.id, title: short(task.title), agent: task.agent, status: task.status, depends_on: [...task.depends_on] })),
    })),
  };
}
