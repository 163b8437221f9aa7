import type { CompletionReason, LoggedEventBody, StopReason } from '@stepwise/shared-types';

type Body<T extends LoggedEventBody['type'], U = never> = Extract<
  LoggedEventBody,
  [U] extends [never] ? { type: T } : { type: T; update_type: U }
>;

/** Typed builders of one run's events, each stamped with the run's id. */
export function runEvents(runId: string) {
  const update = <U extends string>(updateType: U, fields: object) =>
    ({ type: 'agent_update', update_type: updateType, run_id: runId, ...fields }) as Body<'agent_update', U>;
  return {
    start: (maxSteps: number, strategy: string) => update('agent_start', { max_steps: maxSteps, strategy }),
    turnStart: (step: number) => update('agent_turn_start', { step }),
    reason: (step: number, content: string) => update('agent_reason', { content, step }),
    requestInput: (step: number, question: string, toolCallId: string, questionId: string, deadline: Date) =>
      update('agent_request_input', {
        question,
        step,
        question_id: questionId,
        tool_call_id: toolCallId,
        deadline: deadline.toISOString(),
      }),
    requestInputTimeout: (step: number) => update('agent_request_input_timeout', { step }),
    observe: (step: number, content: string) => update('agent_observe', { content, step }),
    stopped: (reason: StopReason, step: number) => update('agent_stopped', { reason, step }),
    error: (step: number, message: string) => update('agent_error', { message, step }),
    completion: (steps: number, reason: CompletionReason) => update('agent_completion', { steps, reason }),
    toolStart: (step: number, toolCallId: string, toolName: string, args: Record<string, unknown>): Body<'tool_start'> => ({
      type: 'tool_start',
      run_id: runId,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      arguments: args,
    }),
    toolComplete: (step: number, toolCallId: string, toolName: string, result: unknown, durationMs: number): Body<'tool_complete'> => ({
      type: 'tool_complete',
      run_id: runId,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      result,
      duration_ms: durationMs,
    }),
    toolError: (step: number, toolCallId: string, toolName: string, error: string, durationMs: number): Body<'tool_error'> => ({
      type: 'tool_error',
      run_id: runId,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      error,
      duration_ms: durationMs,
    }),
    assistantMessage: (content: string): Body<'assistant_message'> => ({ type: 'assistant_message', run_id: runId, content }),
    responseComplete: (): Body<'response_complete'> => ({ type: 'response_complete', run_id: runId }),
    reasonDelta: (step: number, delta: string) =>
      ({ type: 'agent_update', update_type: 'agent_reason_delta', delta, step, run_id: runId }) as const,
    observeDelta: (step: number, delta: string) =>
      ({ type: 'agent_update', update_type: 'agent_observe_delta', delta, step, run_id: runId }) as const,
  };
}
export type RunEvents = ReturnType<typeof runEvents>;
