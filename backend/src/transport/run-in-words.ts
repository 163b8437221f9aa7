import type { AgentRequestInput, ServerEvent } from '@stepwise/shared-types';

/**
 * A question (a confirmation, an approval) in words, for a client that shows text and nothing
 * else: the question (an approval's names the tool and its arguments) and how to answer. The next message the
 * person sends answers it (docs/PROTOCOL.md, "Questions for text-only clients").
 */
export function questionText(event: Pick<AgentRequestInput, 'question' | 'kind' | 'choices'>): string {
  const lines = [event.question.trim()];
  if (event.kind === 'approval') lines.push('Reply "approve" to run it, or "deny" (optionally with a reason after it).');
  else if (event.choices?.length) lines.push(`Reply with one of: ${event.choices.join(', ')}.`);
  return lines.join('\n\n');
}

/** A step of a run in words (a turn, plan step, stage or research task), for progress shown as text; undefined for other events. */
export function stepInWords(event: ServerEvent): string | undefined {
  if (event.type !== 'agent_update') return undefined;
  switch (event.update_type) {
    case 'agent_turn_start':
      return `${event.node_id ? `${event.node_id} · ` : ''}Step ${event.step}`;
    case 'agent_plan_step':
      return event.status === 'running' ? `Plan step ${event.index}` : undefined;
    case 'agent_stage_start':
      return `Stage ${event.stage} (loop ${event.loop})`;
    case 'agent_task_start':
      return `Task ${event.task_id}`;
    default:
      return undefined;
  }
}
