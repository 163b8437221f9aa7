import type { AgentGuidance, AgentMessage, AgentTodos, GuidanceVariant, Todo } from '@stepwise/shared-types';

/** autonomous's own events (PROTOCOL.md "autonomous"), typed. */

type Stamp = { run_id: string };

/** What was injected before an iteration's model call. */
export function guidanceEvent(stamp: Stamp, step: number, variant: GuidanceVariant, level: number, content: string): Omit<AgentGuidance, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_guidance', ...stamp, step, variant, level, content };
}

/** An iteration's text, markers removed. */
export function messageEvent(stamp: Stamp, step: number, content: string): Omit<AgentMessage, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_message', ...stamp, step, content };
}

/** The whole list after a change: a run's (with its id) or a person's between runs (without). */
export function todosEvent(todos: readonly Todo[], stamp?: Stamp): Omit<AgentTodos, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_todos', ...(stamp ?? {}), todos: todos.map((todo) => ({ ...todo })) };
}
