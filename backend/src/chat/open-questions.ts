import type { AgentRequestInput } from '@stepwise/shared-types';
import type { Store } from '../store/store.ts';
import type { ParkedRun } from '../agent/kernel/run-ending.ts';
import { RUN_ENDINGS, sessionEvents } from './run-endings.ts';

/** What is known here of the chat's run executing now, if it executes on this instance. */
export interface LiveRun {
  runId: string | undefined;
  pendingQuestionIds: string[];
}

/**
 * Question `questionId` of a chat, when it is open (its answer would be taken): asked by the chat's
 * last run, which waits on it here, is parked on it, or (executing on another instance) asked it
 * before its deadline and has not been answered nor ended since. Undefined otherwise.
 */
export async function openQuestion(store: Store, sessionId: string, questionId: string, live: LiveRun): Promise<AgentRequestInput | undefined> {
  const run = await store.lastRun(sessionId);
  if (!run || (run.status !== 'running' && run.status !== 'parked')) return undefined;
  let asked: (AgentRequestInput & { seq: number }) | undefined;
  let settled = false;
  for await (const event of sessionEvents(store, sessionId, run.afterSeq ?? 0)) {
    if (event.run_id !== run.id) continue;
    if (!asked) {
      if (event.type === 'agent_update' && event.update_type === 'agent_request_input' && event.question_id === questionId) asked = event;
      continue;
    }
    // What says the question was answered (its call went on), or the run ended.
    const kind = event.type === 'agent_update' ? event.update_type : event.type;
    const answered = event.type === 'agent_update' && event.update_type === 'agent_input_received' && event.question_id === questionId;
    const callWentOn = (event.type === 'tool_complete' || event.type === 'tool_error') && event.tool_call_id === asked.tool_call_id;
    if (answered || callWentOn || RUN_ENDINGS.has(kind) || kind === 'response_complete') settled = true;
  }
  if (!asked) return undefined;
  if (run.status === 'parked') return (run.checkpoint as ParkedRun | undefined)?.questions.includes(questionId) ? asked : undefined;
  if (live.runId === run.id) return live.pendingQuestionIds.includes(questionId) ? asked : undefined;
  const waiting = !settled && (asked.deadline === undefined || Date.parse(asked.deadline) > Date.now());
  return waiting ? asked : undefined;
}
