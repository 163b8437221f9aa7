import type { AgentDecision, AgentStageComplete, AgentStageStart, LoggedEventBody, SolverStage } from '@stepwise/shared-types';

/** solver's own events (PROTOCOL.md "solver"), typed, stamped with the run's id. */

type Stamp = { run_id: string };

/** The orchestrator's answer as the decision event carries it. */
type Decision = Pick<AgentDecision, 'action' | 'rationale' | 'final_answer' | 'question_for_user' | 'next_focus'>;

/** A stage started, in loop `loop`. */
export function stageStartEvent(stamp: Stamp, stage: SolverStage, loop: number): Omit<AgentStageStart, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_stage_start', ...stamp, stage, loop };
}

/** A stage finished with its output (the orchestrator's is its decision as JSON). */
export function stageCompleteEvent(stamp: Stamp, stage: SolverStage, loop: number, content: string): Omit<AgentStageComplete, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_stage_complete', ...stamp, stage, loop, content };
}

/** The orchestrator's decision after loop `loop`, every field of it. */
export function decisionEvent(stamp: Stamp, loop: number, decision: Decision): Omit<AgentDecision, 'seq' | 'ts'> {
  return { type: 'agent_update', update_type: 'agent_decision', ...stamp, loop, ...decision };
}

/** A stage's start or end, as read back from the log. */
export type StageEvent = Omit<AgentStageStart, 'seq' | 'ts'> | Omit<AgentStageComplete, 'seq' | 'ts'>;

/** Whether a logged event is a stage's start or end (it names the stage and the loop). */
export function isStageEvent(event: LoggedEventBody): event is StageEvent {
  return event.type === 'agent_update' && (event.update_type === 'agent_stage_start' || event.update_type === 'agent_stage_complete');
}
