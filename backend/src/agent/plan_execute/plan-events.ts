import type { AgentPlan, AgentPlanStep, AgentRunMetadata, PlanStep, PlanTrigger } from '@stepwise/shared-types';
import type { StepState } from './plan.ts';

/** plan_execute's own events (PROTOCOL.md "plan_execute"), typed, stamped with the run's id. */

type Stamp = { run_id: string };

function wireStep(step: StepState): PlanStep {
  return { index: step.index, goal: step.goal, tools: step.tools, success_criteria: step.successCriteria, context: step.context, status: step.status };
}

/** The plan, whole: revision 1 first, then each re-plan with its trigger (and the ids of the person's messages it follows). */
export function planEvent(
  stamp: Stamp,
  revision: number,
  steps: readonly StepState[],
  trigger?: PlanTrigger,
  messageIds: readonly string[] = [],
): Omit<AgentPlan, 'seq' | 'ts'> {
  return {
    type: 'agent_update',
    update_type: 'agent_plan',
    ...stamp,
    revision,
    ...(trigger ? { trigger } : {}),
    ...(messageIds.length > 0 ? { message_ids: [...messageIds] } : {}),
    steps: steps.map(wireStep),
  };
}

/** A step started (`running`), or ended `done`/`failed` with its attempts and observation. */
export function planStepEvent(stamp: Stamp, step: StepState): Omit<AgentPlanStep, 'seq' | 'ts'> {
  return {
    type: 'agent_update',
    update_type: 'agent_plan_step',
    ...stamp,
    node_id: String(step.index),
    index: step.index,
    status: step.status === 'pending' ? 'running' : step.status,
    attempts: step.attempts,
    ...(step.status === 'done' || step.status === 'failed' ? { observation: step.observation } : {}),
  };
}

/** What the run did: its plan revisions, each executed step, and the counts; sent before the ending. */
export function runMetadataEvent(stamp: Stamp, revisions: number, steps: readonly StepState[]): Omit<AgentRunMetadata, 'seq' | 'ts'> {
  const executed = steps.filter((step) => step.status === 'done' || step.status === 'failed');
  const succeeded = executed.filter((step) => step.status === 'done').length;
  return {
    type: 'agent_update',
    update_type: 'agent_run_metadata',
    ...stamp,
    planning: { revisions, steps: steps.length },
    execution: executed.map((step) => ({
      index: step.index,
      goal: step.goal,
      success: step.status === 'done',
      attempts: step.attempts,
      tools_used: step.toolsUsed,
      observation: step.observation,
    })),
    summary: {
      steps_total: steps.length,
      succeeded,
      failed: executed.length - succeeded,
      success_rate: steps.length === 0 ? 0 : Math.round((succeeded / steps.length) * 1000) / 1000,
      tool_attempts: executed.reduce((sum, step) => sum + step.toolCalls, 0),
    },
  };
}
