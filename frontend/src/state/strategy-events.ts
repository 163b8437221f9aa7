import {
  AgentDecision,
  AgentGuidance,
  AgentInputReceived,
  AgentMessage,
  AgentPlan,
  AgentPlanStep,
  AgentRunMetadata,
  AgentStageComplete,
  AgentStageStart,
  AgentTaskComplete,
  AgentTaskGraph,
  AgentTaskStart,
  AgentTodos,
  AgentVerdict,
} from '@stepwise/shared-types';
import { branchName } from './branch-kind.ts';
import type {
  KnownStrategyEvent,
  KnownStrategyEventOf,
  RunView,
  StrategyEventView,
  StrategyUpdate,
  StrategyUpdateType,
  UnknownStrategyEvent,
} from './view-state.ts';

/** A checked update as the run view keeps it: its place, its type, and the update itself. */
const kept = <E extends StrategyUpdate>(event: E): KnownStrategyEventOf<E> => ({
  seq: event.seq,
  ts: event.ts,
  updateType: event.update_type,
  ...(event.node_id === undefined ? {} : { nodeId: event.node_id }),
  event,
});

/** Each strategy update type's schema (shared-types), giving the typed strategy event it checks. */
const STRATEGY_SCHEMAS = {
  agent_input_received: AgentInputReceived.transform(kept),
  agent_plan: AgentPlan.transform(kept),
  agent_plan_step: AgentPlanStep.transform(kept),
  agent_run_metadata: AgentRunMetadata.transform(kept),
  agent_guidance: AgentGuidance.transform(kept),
  agent_message: AgentMessage.transform(kept),
  agent_todos: AgentTodos.transform(kept),
  agent_stage_start: AgentStageStart.transform(kept),
  agent_stage_complete: AgentStageComplete.transform(kept),
  agent_decision: AgentDecision.transform(kept),
  agent_task_graph: AgentTaskGraph.transform(kept),
  agent_task_start: AgentTaskStart.transform(kept),
  agent_task_complete: AgentTaskComplete.transform(kept),
  agent_verdict: AgentVerdict.transform(kept),
} satisfies { [K in StrategyUpdateType]: { safeParse(value: unknown): { success: true; data: KnownStrategyEvent<K> } | { success: false } } };

function isStrategyUpdateType(updateType: string): updateType is StrategyUpdateType {
  return Object.hasOwn(STRATEGY_SCHEMAS, updateType);
}

/**
 * A logged agent_update as a strategy event: typed when shared-types describes its update type and
 * it fits the schema; otherwise (a newer server's type, a known one that does not fit) its fields, unchecked.
 */
export function strategyEvent(update: { seq: number; ts: string; [field: string]: unknown }): StrategyEventView {
  const { type: _type, update_type, seq, ts, run_id: _runId, node_id, ...fields } = update;
  if (typeof update_type === 'string' && isStrategyUpdateType(update_type)) {
    const parsed = STRATEGY_SCHEMAS[update_type].safeParse(update);
    if (parsed.success) return parsed.data;
  }
  const unknown: UnknownStrategyEvent = {
    seq,
    ts,
    updateType: typeof update_type === 'string' ? update_type : 'unknown',
    ...(typeof node_id === 'string' ? { nodeId: node_id } : {}),
    fields,
  };
  return unknown;
}

/** A run's strategy events of one known update type, typed (in log order); those that did not fit their schema are left out. */
export function eventsOf<K extends StrategyUpdateType>(run: RunView, updateType: K): Array<KnownStrategyEvent<K>> {
  return run.strategyEvents.filter((view): view is KnownStrategyEvent<K> => view.event !== undefined && view.updateType === updateType);
}

/** A strategy event's fields as they came (type, update_type, seq, ts, run_id and node_id left out): what the generic list shows. */
export function fieldsOf(view: StrategyEventView): Record<string, unknown> {
  if (view.event === undefined) return view.fields;
  const { type: _type, update_type: _updateType, seq: _seq, ts: _ts, run_id: _runId, node_id: _nodeId, ...fields } = view.event;
  return fields;
}

/** Words for the update types PROTOCOL.md lists under "Strategies"; others are put in words from their name. */
const UPDATE_TYPE_WORDS: Record<string, string> = {
  agent_plan: 'Plan',
  agent_plan_step: 'Plan step',
  agent_run_metadata: 'Run summary',
  agent_guidance: 'Guidance',
  agent_message: 'Message',
  agent_todos: 'To-dos',
  agent_stage_start: 'Stage started',
  agent_stage_complete: 'Stage finished',
  agent_decision: 'Decision',
  agent_task_graph: 'Task graph',
  agent_task_start: 'Task started',
  agent_task_complete: 'Task finished',
  agent_verdict: 'Verdict',
};

/** An update type in words: "agent_task_graph" → "Task graph", an unknown "agent_new_thing" → "New thing". */
export function describeUpdateType(updateType: string): string {
  const known = UPDATE_TYPE_WORDS[updateType];
  if (known) return known;
  const words = updateType
    .replace(/^agent_/, '')
    .replace(/_/g, ' ')
    .trim();
  return words ? words[0]!.toUpperCase() + words.slice(1) : updateType;
}

const SUMMARY_LIMIT = 140;

/** Research's agents as people read them. */
const AGENT_WORDS: Record<string, string> = {
  literature_scout: 'Scout',
  paper_reader: 'Reader',
  derivation_coder: 'Coder',
  verifier: 'Verifier',
  orchestrator: 'Orchestrator',
};

const words = (value: string) => value.replace(/_/g, ' ');

/**
 * A strategy event's line in words a person reads ("Step 2 · done: 84 + 15 = 99", "Scout · task
 * 1.1 started"), or, for an event this app has no words for, its fields in one line.
 */
export function describeEvent(view: StrategyEventView): string {
  const said = (() => {
    const { event } = view;
    switch (event?.update_type) {
      case 'agent_plan_step':
        // Said as what happened ("started"), never as a state ("running") that a finished run would contradict.
        return `Step ${event.index} ${event.status === 'running' ? 'started' : words(event.status)}${event.attempts > 1 ? ` (attempt ${event.attempts})` : ''}${event.observation ? `: ${event.observation}` : ''}`;
      case 'agent_task_start':
        return `${AGENT_WORDS[event.agent] ?? words(event.agent)} · task ${event.task_id} started`;
      case 'agent_task_complete':
        return `Task ${event.task_id} · ${words(event.status)}${event.summary ? `: ${event.summary}` : ''}`;
      case 'agent_stage_start':
        return `${words(event.stage)} · loop ${event.loop}`;
      case 'agent_stage_complete':
        return `${words(event.stage)} done · loop ${event.loop}`;
      case 'agent_decision':
        return `${words(event.action)}${event.rationale ? `: ${event.rationale}` : ''}`;
      case 'agent_verdict':
        return `${event.scope === 'final' ? 'Final' : `${words(event.scope)} ${event.target}`}: ${event.verdict}${event.issues.length ? ` · ${event.issues.length} issue${event.issues.length === 1 ? '' : 's'}` : ''}`;
      case 'agent_todos':
        return `${event.todos.length} to-do${event.todos.length === 1 ? '' : 's'}, ${event.todos.filter((todo) => todo.status === 'completed').length} done`;
      case 'agent_guidance':
        return 'A reminder for this iteration';
      default:
        return undefined;
    }
  })();
  return said === undefined ? summarizeFields(fieldsOf(view)) : shorten(plainText(said), SUMMARY_LIMIT);
}

/** A one-line summary without Markdown's marks (a finding's `code` and **bold** read as their words). */
function plainText(text: string): string {
  return text
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .replace(/`([^`]+)`/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * One line of an event's fields: scalars as "name: value", lists by their length ("3 steps"),
 * objects left out (the full event is one click away).
 */
export function summarizeFields(fields: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const name = key.replace(/_/g, ' ');
    if (typeof value === 'string') {
      if (value.trim()) parts.push(`${name}: ${shorten(value.replace(/\s+/g, ' ').trim(), 60)}`);
    } else if (typeof value === 'number' || typeof value === 'boolean') {
      parts.push(`${name}: ${value}`);
    } else if (Array.isArray(value)) {
      parts.push(`${value.length} ${name}`);
    }
  }
  return shorten(parts.join(' · '), SUMMARY_LIMIT);
}

/** A branch's heading: "Step 3 · Find the population" when the plan or task graph names its goal, else "Step 3". */
export function branchTitle(run: RunView, nodeId: string): string {
  const name = branchName(run.strategy, nodeId);
  const item = latestItem(run, nodeId, (entry) => entry.name);
  return item ? `${name} · ${item}` : name;
}

/** The latest status a strategy reported for a branch ("running", "done", "failed"…), if any. */
export function branchStatus(run: RunView, nodeId: string): string | undefined {
  for (const view of newestFirst(run.strategyEvents)) {
    const own = ownStatus(view, nodeId);
    if (own !== undefined) return own;
    const entry = listedItems(view).find((candidate) => candidate.id === nodeId);
    if (entry?.status !== undefined) return entry.status;
  }
  return undefined;
}

/** The strategy events of one branch (those that carry its node id), or those outside every branch. */
export function branchEvents(run: RunView, nodeId: string | undefined): StrategyEventView[] {
  return run.strategyEvents.filter((event) => event.nodeId === nodeId);
}

/** The status an event reports of the branch itself: a plan step's, a finished task's (or an unknown event's that names it). */
function ownStatus(view: StrategyEventView, nodeId: string): string | undefined {
  const mine = view.nodeId === nodeId;
  if (view.event === undefined) {
    const { fields } = view;
    const names = mine || (fields.index !== undefined && String(fields.index) === nodeId) || fields.task_id === nodeId;
    return names && typeof fields.status === 'string' ? fields.status : undefined;
  }
  if (view.updateType === 'agent_plan_step') return mine || String(view.event.index) === nodeId ? view.event.status : undefined;
  if (view.updateType === 'agent_task_complete') return mine || view.event.task_id === nodeId ? view.event.status : undefined;
  return undefined;
}

/** The newest plan step or task-graph task with this id, mapped by `pick`. */
function latestItem(run: RunView, nodeId: string, pick: (entry: ListedItem) => string | undefined): string | undefined {
  for (const view of newestFirst(run.strategyEvents)) {
    const entry = listedItems(view).find((candidate) => candidate.id === nodeId);
    const value = entry ? pick(entry) : undefined;
    if (value) return value;
  }
  return undefined;
}

/** A plan step or a task-graph task: its branch id, what it is called (a goal, a title) and its status. */
interface ListedItem {
  id: string | undefined;
  name: string | undefined;
  status: string | undefined;
}

/** A plan's steps, or a task graph's tasks over all its stages (an unknown event's `steps` and `stages` alike). */
function listedItems(view: StrategyEventView): ListedItem[] {
  if (view.event === undefined) {
    const { fields } = view;
    return [...records(fields.steps), ...records(fields.stages).flatMap((stage) => records(stage.tasks))].map((entry) => ({
      id: itemId(entry),
      name: text(entry.goal) ?? text(entry.title),
      status: typeof entry.status === 'string' ? entry.status : undefined,
    }));
  }
  if (view.updateType === 'agent_plan') return view.event.steps.map((step) => ({ id: String(step.index), name: text(step.goal), status: step.status }));
  if (view.updateType === 'agent_task_graph') {
    return view.event.stages.flatMap((stage) => stage.tasks.map((task) => ({ id: task.id, name: text(task.title), status: task.status })));
  }
  return [];
}

function itemId(entry: Record<string, unknown>): string | undefined {
  const id = entry.index ?? entry.id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

function records(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter((entry): entry is Record<string, unknown> => typeof entry === 'object' && entry !== null) : [];
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}

function newestFirst<T>(values: T[]): T[] {
  return values.toReversed();
}

function shorten(value: string, max: number): string {
  return value.length > max ? `${value.slice(0, max - 1).trimEnd()}…` : value;
}
