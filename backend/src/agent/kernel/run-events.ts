import type { AgentUsage, By, CompletionReason, LoggedEventBody, StopReason, StoppedCall, TokenUsage } from '@stepwise/shared-types';

/** A run's totals as its ending events carry them. */
export interface RunTotals {
  usage: TokenUsage;
  cost_usd: number | null;
}

type Body<T extends LoggedEventBody['type'], U = never> = Extract<LoggedEventBody, [U] extends [never] ? { type: T } : { type: T; update_type: U }>;

/**
 * Typed builders of one run's events, each stamped with the run's id (plain chat's carry none) and,
 * inside a branch of the run, the branch's `node_id` (see `node`).
 */
export function runEvents(runId: string | undefined, nodeId?: string) {
  const stamp = { ...(runId === undefined ? {} : { run_id: runId }), ...(nodeId === undefined ? {} : { node_id: nodeId }) };
  const update = <U extends string>(updateType: U, fields: object) =>
    ({ type: 'agent_update', update_type: updateType, ...stamp, ...fields }) as Body<'agent_update', U>;
  return {
    /** The same builders for events of one branch (a plan step "3", a research task "1.2"). */
    node: (id: string) => runEvents(runId, id),
    start: (
      maxSteps: number,
      strategy: string,
      extra: {
        options?: Record<string, unknown>;
        tools?: string[];
        resumedFrom?: string | undefined;
        traceId?: string | undefined;
        /** The queued message the run was started for, and its words. */
        fromMessage?: { id: string; question: string } | undefined;
      } = {},
    ) =>
      update('agent_start', {
        max_steps: maxSteps,
        strategy,
        ...(extra.options ? { options: extra.options } : {}),
        ...(extra.tools ? { tools: extra.tools } : {}),
        ...(extra.resumedFrom ? { resumed_from: extra.resumedFrom } : {}),
        ...(extra.traceId ? { trace_id: extra.traceId } : {}),
        ...(extra.fromMessage ? { message_id: extra.fromMessage.id, question: extra.fromMessage.question } : {}),
      }),
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
    /** A tool call that waits for a person's approval: a question of kind "approval" naming the tool and its arguments. */
    approval: (step: number, question: string, toolCallId: string, questionId: string, deadline: Date, tool: string, args: Record<string, unknown>) =>
      update('agent_request_input', {
        question,
        step,
        question_id: questionId,
        tool_call_id: toolCallId,
        deadline: deadline.toISOString(),
        kind: 'approval' as const,
        choices: ['Approve', 'Deny'],
        tool,
        arguments: args,
      }),
    requestInputTimeout: (step: number) => update('agent_request_input_timeout', { step }),
    /** Nobody answered question `questionId` in time: the run is parked until someone does. */
    parked: (step: number, questionId: string) => update('agent_parked', { step, question_id: questionId }),
    observe: (step: number, content: string) => update('agent_observe', { content, step }),
    stopped: (reason: StopReason, step: number, totals?: RunTotals, calls?: StoppedCall[], by?: By) =>
      update('agent_stopped', { reason, ...(by ? { by } : {}), step, ...(calls?.length ? { calls } : {}), ...totals }),
    /** A person answered a question or an approval (multi-user modes: who did). */
    inputReceived: (questionId: string, by: By) => update('agent_input_received', { question_id: questionId, by }),
    /** A person's message reached the run (`cut`: the words of the model call it interrupted). */
    steer: (step: number, steer: { id: string; content: string; delivery: 'steer' | 'interrupt' }, cut?: string) =>
      update('agent_steer', {
        message_id: steer.id,
        step,
        content: steer.content,
        delivery: steer.delivery,
        ...(cut === undefined ? {} : { interrupted: true, ...(cut ? { partial: cut } : {}) }),
      }),
    nodeStopped: (step: number, calls: StoppedCall[], by?: By) => update('agent_node_stopped', { step, calls, ...(by ? { by } : {}) }),
    error: (step: number, message: string, totals?: RunTotals) => update('agent_error', { message, step, ...totals }),
    completion: (steps: number, reason: CompletionReason, totals?: RunTotals, summary?: string) =>
      update('agent_completion', { steps, reason, ...(summary ? { summary } : {}), ...totals }),
    /** What one model call spent, and the run's cost so far. */
    usage: (call: Omit<AgentUsage, 'type' | 'update_type' | 'seq' | 'ts' | 'run_id' | 'node_id'>) => update('agent_usage', call),
    /** A call was answered by a fallback model of its route. */
    modelFallback: (step: number, purpose: string, fallback: { model: string; from: string; failures: Array<{ model: string; reason: string }> }) =>
      update('agent_model_fallback', { purpose, model: fallback.model, from_model: fallback.from, failures: fallback.failures, step }),
    toolStart: (step: number, toolCallId: string, toolName: string, args: Record<string, unknown>): Body<'tool_start'> => ({
      type: 'tool_start',
      ...stamp,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      arguments: args,
    }),
    toolComplete: (
      step: number,
      toolCallId: string,
      toolName: string,
      result: unknown,
      durationMs: number,
      editedArguments?: Record<string, unknown>,
    ): Body<'tool_complete'> => ({
      type: 'tool_complete',
      ...stamp,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      result,
      duration_ms: durationMs,
      ...(editedArguments ? { arguments: editedArguments } : {}),
    }),
    toolError: (step: number, toolCallId: string, toolName: string, error: string, durationMs: number): Body<'tool_error'> => ({
      type: 'tool_error',
      ...stamp,
      step,
      tool_call_id: toolCallId,
      tool_name: toolName,
      error,
      duration_ms: durationMs,
    }),
    assistantMessage: (content: string): Body<'assistant_message'> => ({ type: 'assistant_message', ...stamp, content }),
    responseComplete: (): Body<'response_complete'> => ({ type: 'response_complete', ...stamp }),
    /** A plain chat answer failed: logged, so a reload shows it too. */
    failed: (code: string, message: string): Body<'error'> => ({ type: 'error', ...stamp, code, message }),
    reasonDelta: (step: number, delta: string) => ({ type: 'agent_update', update_type: 'agent_reason_delta', delta, step, ...stamp }) as const,
    observeDelta: (step: number, delta: string) => ({ type: 'agent_update', update_type: 'agent_observe_delta', delta, step, ...stamp }) as const,
    assistantDelta: (delta: string) => ({ type: 'assistant_delta', delta, ...stamp }) as const,
  };
}
export type RunEvents = ReturnType<typeof runEvents>;
