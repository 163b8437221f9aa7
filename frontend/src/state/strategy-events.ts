import type { RunView, StrategyEventView } from './view-state.ts';

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

const words = (value: unknown) => String(value ?? '').replace(/_/g, ' ');

/**
 * A strategy event's line in words a person reads ("Step 2 · done: 84 + 15 = 99", "Scout · task
 * 1.1 started"), or, for an event this app has no words for, its fields in one line.
 */
export function describeFields(updateType: string, fields: Record<string, unknown>): string {
  const said = (() => {
    switch (updateType) {
      case 'agent_plan_step':
        return `Step ${fields.index} · ${words(fields.status)}${Number(fields.attempts) > 1 ? ` (attempt ${fields.attempts})` : ''}${fields.observation ? `: ${fields.observation}` : ''}`;
      case 'agent_task_start':
        return `${AGENT_WORDS[String(fields.agent)] ?? words(fields.agent)} · task ${fields.task_id} started`;
      case 'agent_task_complete':
        return `Task ${fields.task_id} · ${words(fields.status)}${fields.summary ? `: ${fields.summary}` : ''}`;
      case 'agent_stage_start':
        return `${words(fields.stage)} · loop ${fields.loop}`;
      case 'agent_stage_complete':
        return `${words(fields.stage)} done · loop ${fields.loop}`;
      case 'agent_decision':
        return `${words(fields.action)}${fields.rationale ? `: ${fields.rationale}` : ''}`;
      case 'agent_verdict':
        return `${fields.scope === 'final' ? 'Final' : `${words(fields.scope)} ${fields.target}`}: ${fields.verdict}${Array.isArray(fields.issues) && fields.issues.length ? ` · ${fields.issues.length} issue${fields.issues.length === 1 ? '' : 's'}` : ''}`;
      case 'agent_todos': {
        const todos = Array.isArray(fields.todos) ? (fields.todos as Array<{ status?: string }>) : [];
        return `${todos.length} to-do${todos.length === 1 ? '' : 's'}, ${todos.filter((todo) => todo.status === 'completed').length} done`;
      }
      case 'agent_guidance':
        return 'A reminder for this iteration';
      default:
        return undefined;
    }
  })();
  return said === undefined ? summarizeFields(fields) : shorten(plainText(said), SUMMARY_LIMIT);
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

/** What a branch is called: "Step 3" in a plan, "Task 1.2" in research (a dotted id elsewhere too). */
export function branchKind(run: RunView, nodeId: string): 'Step' | 'Task' {
  if (run.strategy === 'plan_execute') return 'Step';
  if (run.strategy === 'research') return 'Task';
  return nodeId.includes('.') ? 'Task' : 'Step';
}

/** A branch's heading: "Step 3 · Find the population" when the plan or task graph names its goal, else "Step 3". */
export function branchTitle(run: RunView, nodeId: string): string {
  const name = `${branchKind(run, nodeId)} ${nodeId}`;
  const item = latestItem(run, nodeId, (entry) => text(entry.goal) ?? text(entry.title));
  return item ? `${name} · ${item}` : name;
}

/** The latest status a strategy reported for a branch ("running", "done", "failed"…), if any. */
export function branchStatus(run: RunView, nodeId: string): string | undefined {
  for (const event of newestFirst(run.strategyEvents)) {
    const { fields } = event;
    const names = event.nodeId === nodeId || (fields.index !== undefined && String(fields.index) === nodeId) || fields.task_id === nodeId;
    if (names && typeof fields.status === 'string') return fields.status;
    const entry = listedItems(fields).find((candidate) => itemId(candidate) === nodeId);
    if (entry && typeof entry.status === 'string') return entry.status;
  }
  return undefined;
}

/** The strategy events of one branch (those that carry its node id), or those outside every branch. */
export function eventsOf(run: RunView, nodeId: string | undefined): StrategyEventView[] {
  return run.strategyEvents.filter((event) => event.nodeId === nodeId);
}

/** The newest plan step or task-graph task with this id, mapped by `pick`. */
function latestItem(run: RunView, nodeId: string, pick: (entry: Record<string, unknown>) => string | undefined): string | undefined {
  for (const event of newestFirst(run.strategyEvents)) {
    const entry = listedItems(event.fields).find((candidate) => itemId(candidate) === nodeId);
    const value = entry ? pick(entry) : undefined;
    if (value) return value;
  }
  return undefined;
}

/** A plan's steps, or a task graph's tasks over all its stages. */
function listedItems(fields: Record<string, unknown>): Record<string, unknown>[] {
  const steps = records(fields.steps);
  const tasks = records(fields.stages).flatMap((stage) => records(stage.tasks));
  return [...steps, ...tasks];
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
