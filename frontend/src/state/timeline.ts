import { branchName } from './branch-kind.ts';
import type { RunView, TimelineEvent } from './view-state.ts';

/** One bar of a run's timeline: a model call, a tool call, or time spent waiting for the person. */
export interface TimelineBar {
  kind: 'model' | 'tool' | 'wait';
  label: string;
  /** Milliseconds from the run's start. */
  start: number;
  end: number;
  detail: string;
}

/** A row: the run, or one of its branches (a task, a plan step, a solver stage). */
export interface TimelineRow {
  key: string;
  label: string;
  bars: TimelineBar[];
}

/** Events that end a model call when no agent_usage said so first: what the call produced. */
const MODEL_OUTPUT: Record<string, string> = {
  agent_reason: 'reason',
  agent_observe: 'observe',
  agent_message: 'iteration',
  agent_stage_complete: 'stage',
  agent_decision: 'decision',
  agent_plan: 'plan',
  agent_verdict: 'verdict',
  agent_task_complete: 'task result',
};

const STAGE_WORDS: Record<string, string> = {
  approach_proposer: 'Approaches',
  approach_evaluator: 'Approach chosen',
  problem_solver: 'Solver',
  expert_evaluator: 'Expert check',
  orchestrator: 'Orchestrator',
};

interface RowState {
  row: TimelineRow;
  last: number;
  lastKind: string | undefined;
  /** An agent_usage closed the call whose output comes next: that output draws no bar of its own. */
  usageClosed: boolean;
  waitingSince: number | undefined;
}

/**
 * A run's timeline from its logged events' timestamps: rows per branch (research task, plan step,
 * solver stage; one row for a run that does not branch), bars for model calls (ended by their
 * agent_usage, with purpose and tokens, or else by what they produced), tool calls (their start to
 * their end) and the time a question or an approval waited for the person.
 */
export function buildTimeline(run: RunView): { rows: TimelineRow[]; duration: number } {
  const events = [...(run.timeline ?? [])].sort((a, b) => a.seq - b.seq);
  if (events.length === 0) return { rows: [], duration: 0 };
  const t0 = Date.parse(events[0]!.ts);
  const at = (event: TimelineEvent) => Math.max(0, Date.parse(event.ts) - t0);
  const rows = new Map<string, RowState>();
  const toolStarts = new Map<string, { at: number; row: RowState; tool: string }>();
  let stage: string | undefined;
  const rowOf = (event: TimelineEvent, time: number): RowState => {
    const key = event.nodeId ? `node:${event.nodeId}` : stage ? `stage:${stage}` : 'run';
    let state = rows.get(key);
    if (!state) {
      const label = event.nodeId ? branchName(run.strategy, event.nodeId) : stage ? (STAGE_WORDS[stage] ?? stage) : 'Run';
      state = { row: { key, label, bars: [] }, last: key === 'run' ? 0 : time, lastKind: undefined, usageClosed: false, waitingSince: undefined };
      rows.set(key, state);
    }
    return state;
  };
  for (const event of events) {
    if (event.kind === 'agent_stage_start') stage = event.stage;
    const time = at(event);
    const state = rowOf(event, time);
    const bar = (kind: TimelineBar['kind'], label: string, start: number, detail: string) =>
      state.row.bars.push({ kind, label, start, end: Math.max(start, time), detail });
    if (state.waitingSince !== undefined && event.kind !== 'agent_usage') {
      bar('wait', 'waiting for you', state.waitingSince, `Waited ${seconds(time - state.waitingSince)} for an answer`);
      state.waitingSince = undefined;
    }
    switch (event.kind) {
      case 'agent_usage': {
        const tokens = (event.promptTokens ?? 0) + (event.completionTokens ?? 0);
        bar(
          'model',
          event.purpose ?? 'model call',
          state.last,
          `${event.purpose ?? 'model call'} · ${seconds(time - state.last)} · ${tokens} tokens${typeof event.costUsd === 'number' ? ` · $${event.costUsd}` : ''}`,
        );
        state.usageClosed = true;
        break;
      }
      case 'tool_start': {
        // The call that chose the tools ends where the first of them starts (unless its usage said so).
        if (
          !state.usageClosed &&
          state.lastKind !== 'tool_start' &&
          state.lastKind !== 'tool_complete' &&
          state.lastKind !== 'tool_error' &&
          time > state.last
        ) {
          bar('model', 'act', state.last, `act · ${seconds(time - state.last)}`);
        }
        state.usageClosed = false;
        if (event.toolCallId) toolStarts.set(event.toolCallId, { at: time, row: state, tool: event.tool ?? 'tool' });
        break;
      }
      case 'tool_complete':
      case 'tool_error': {
        const started = event.toolCallId ? toolStarts.get(event.toolCallId) : undefined;
        const start = event.durationMs !== undefined ? Math.max(0, time - event.durationMs) : (started?.at ?? state.last);
        const tool = started?.tool ?? event.tool ?? 'tool';
        const target = started?.row ?? state;
        if (tool === 'request_input') {
          target.row.bars.push({
            kind: 'wait',
            label: 'waiting for you',
            start: started?.at ?? start,
            end: time,
            detail: `Waited ${seconds(time - (started?.at ?? start))} for an answer`,
          });
        } else {
          target.row.bars.push({
            kind: 'tool',
            label: tool,
            start,
            end: Math.max(start, time),
            detail: `${tool} · ${seconds(time - start)}${event.kind === 'tool_error' ? ' · failed' : ''}`,
          });
        }
        break;
      }
      case 'agent_request_input':
        // A question of the run itself (not request_input's, whose tool call shows it): it waits from here.
        if (!event.toolCallId || !toolStarts.has(event.toolCallId) || toolStarts.get(event.toolCallId)!.tool !== 'request_input') state.waitingSince = time;
        break;
      default: {
        const output = MODEL_OUTPUT[event.kind];
        if (output && !state.usageClosed && time >= state.last) bar('model', output, state.last, `${output} · ${seconds(time - state.last)}`);
        if (output) state.usageClosed = false;
      }
    }
    state.last = time;
    state.lastKind = event.kind;
  }
  const duration = Math.max(1, at(events.at(-1)!));
  return { rows: [...rows.values()].map((state) => state.row).filter((row) => row.bars.length > 0), duration };
}

/** Tokens and cost of a run by purpose, from its agent_usage events. */
export function spendingByPurpose(run: RunView): Array<{ purpose: string; calls: number; tokens: number; costUsd: number | null }> {
  const byPurpose = new Map<string, { purpose: string; calls: number; tokens: number; costUsd: number | null }>();
  for (const event of run.timeline ?? []) {
    if (event.kind !== 'agent_usage') continue;
    const purpose = event.purpose ?? 'model call';
    const entry = byPurpose.get(purpose) ?? { purpose, calls: 0, tokens: 0, costUsd: 0 };
    entry.calls++;
    entry.tokens += (event.promptTokens ?? 0) + (event.completionTokens ?? 0);
    entry.costUsd = entry.costUsd === null || typeof event.costUsd !== 'number' ? null : entry.costUsd + event.costUsd;
    byPurpose.set(purpose, entry);
  }
  return [...byPurpose.values()].sort((a, b) => b.tokens - a.tokens);
}

export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
