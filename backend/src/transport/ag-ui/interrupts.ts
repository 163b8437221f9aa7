import type { Interrupt } from '@ag-ui/core';
import type { AgentRequestInput } from '@stepwise/shared-types';

/** A question as an AG-UI interrupt: its id answers it; choices become the answer's schema. */
export function interruptOf(event: AgentRequestInput): Interrupt {
  const approval = event.kind === 'approval';
  return {
    id: event.question_id ?? `${event.run_id}:${event.step}`,
    reason: approval ? 'tool_approval' : event.kind === 'confirm' ? 'confirmation' : 'input_required',
    message: event.question,
    ...(event.tool_call_id ? { toolCallId: event.tool_call_id } : {}),
    responseSchema: approval ? APPROVAL_SCHEMA : event.choices?.length ? { type: 'string', enum: event.choices } : { type: 'string' },
    ...(event.deadline ? { expiresAt: event.deadline } : {}),
    ...(approval ? { metadata: { tool: event.tool, arguments: event.arguments } } : {}),
  };
}

/** What a resume answers an approval with (docs/PROTOCOL.md, agent_user_input.approval). */
const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    decision: { type: 'string', enum: ['approve', 'deny'] },
    arguments: { type: 'object', description: 'The arguments to run with, edited' },
    reason: { type: 'string', description: 'Why it is denied' },
    remember: { type: 'string', enum: ['run'], description: 'Approve later calls of the tool in this run' },
  },
  required: ['decision'],
};
