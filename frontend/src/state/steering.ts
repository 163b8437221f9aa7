import {
  type AgentNodeStopped,
  type AgentStart,
  type AgentSteer,
  type Delivery,
  type ErrorEvent,
  type PendingMessage,
  refusesChat,
} from '@stepwise/shared-types';
import { branchKind } from './branch-kind.ts';
import { settleStep } from './run-tree.ts';
import type { ChatItem, PendingMessageView, RunView, SteerView, ViewState } from './view-state.ts';

/** What a person did to a run while it runs: a message sent to it, a waiting message withdrawn. */
export type SteeringAction =
  | { kind: 'message_sent'; id: string; content: string; delivery: Delivery; nodeId?: string; runId?: string }
  | { kind: 'cancel_requested'; messageId: string };

/** The view of a person's message sent during a run, as it waits. */
export function pendingView(message: PendingMessage): PendingMessageView {
  return {
    id: message.message_id,
    status: 'waiting',
    delivery: message.delivery,
    content: message.content,
    position: message.position,
    ...(message.node_id === undefined ? {} : { nodeId: message.node_id }),
    ...(message.run_id === undefined ? {} : { runId: message.run_id }),
  };
}

/** A message went out during a run: it shows as sent until the server stores it. */
export function messageSent(state: ViewState, action: SteeringAction): ViewState {
  if (action.kind === 'cancel_requested') {
    return { ...state, pending: state.pending.map((message) => (message.id === action.messageId ? { ...message, status: 'cancelling' } : message)) };
  }
  const sent: PendingMessageView = {
    id: action.id,
    status: 'sending',
    delivery: action.delivery,
    content: action.content,
    ...(action.nodeId === undefined ? {} : { nodeId: action.nodeId }),
    ...(action.runId === undefined ? {} : { runId: action.runId }),
  };
  // Files attached to the composer went with it.
  return { ...state, notice: undefined, attached: [], pending: [...state.pending, sent] };
}

/**
 * The server stored a message sent during a run (message_queued, to every client of the chat):
 * this tab's own message when one it sent is still unconfirmed with these words, another tab's otherwise.
 */
export function messageQueued(state: ViewState, message: PendingMessage): ViewState {
  const stored = pendingView(message);
  if (state.pending.some((waiting) => waiting.id === stored.id)) return state;
  const own = state.pending.findIndex(
    (waiting) => waiting.status === 'sending' && waiting.content === stored.content && waiting.delivery === stored.delivery && waiting.nodeId === stored.nodeId,
  );
  // A steer belongs to the run going on when it was sent.
  const runId = stored.runId ?? state.pending[own]?.runId ?? (stored.delivery === 'queue' ? undefined : state.activeRunId);
  const view = runId === undefined ? stored : { ...stored, runId };
  return { ...state, pending: own < 0 ? [...state.pending, view] : state.pending.with(own, view) };
}

/** A waiting message was withdrawn (message_cancelled), or reached its run: it waits no more. */
export function withoutPending(state: ViewState, messageId: string): ViewState {
  return state.pending.some((message) => message.id === messageId) ? { ...state, pending: state.pending.filter((message) => message.id !== messageId) } : state;
}

/**
 * An error that answers a message sent during a run (queue_full, message_too_long, or any refusal
 * of a chat message) takes back the oldest one still unconfirmed; unknown_message answers a
 * withdrawal that came too late, which then waits as before (its run says where it landed). The
 * run's view is left as it was. Undefined when the error is about something else.
 */
export function refusedMessage(state: ViewState, error: ErrorEvent): ViewState | undefined {
  const notice = { code: error.code, message: error.message };
  if (error.code === 'unknown_message') {
    return { ...state, notice, pending: state.pending.map((message) => (message.status === 'cancelling' ? { ...message, status: 'waiting' } : message)) };
  }
  const sending = state.pending.findIndex((message) => message.status === 'sending');
  if (sending < 0 || !refusesChat(error.code)) return undefined;
  return { ...state, notice, pending: state.pending.toSpliced(sending, 1) };
}

/** A run a queued message started (agent_start names it): that message waits no more, and its words are the run's user turn, just before it. */
export function queuedTurn(state: ViewState, event: AgentStart): { state: ViewState; turn?: ChatItem } {
  if (event.message_id === undefined) return { state };
  const content = event.question ?? state.pending.find((message) => message.id === event.message_id)?.content;
  const next = withoutPending(state, event.message_id);
  const id = `q${event.message_id}`;
  const order = event.seq - 0.5;
  if (content === undefined || next.items.some((item) => item.id === id)) return { state: next };
  // The history API's copy of it (loaded first) gives way.
  const items = next.items.filter((item) => !(item.kind === 'user' && item.order === order && item.content === content));
  return { state: { ...next, items }, turn: { kind: 'user', id, content, order, queued: true } };
}

/**
 * A plain answer began that nobody here waited for (its start names no message): the oldest queued
 * message started it, and its words are the answer's user turn.
 */
export function queuedPlainTurn(state: ViewState): { state: ViewState; turn?: ChatItem } {
  if (state.busy || state.streamingAnswer !== undefined) return { state };
  const next = state.pending.find((message) => message.delivery === 'queue' && message.status === 'waiting');
  if (!next) return { state };
  return { state: withoutPending(state, next.id), turn: { kind: 'user', id: `q${next.id}`, content: next.content, order: state.lastSeq + 0.5, queued: true } };
}

/** A steer reached the run (agent_steer): it is kept where it landed, and waits no more. */
export function steerApplied(state: ViewState, run: RunView, event: AgentSteer): { state: ViewState; run: RunView } {
  const steer: SteerView = {
    messageId: event.message_id,
    seq: event.seq,
    step: event.step,
    content: event.content,
    delivery: event.delivery,
    ...(event.node_id === undefined ? {} : { nodeId: event.node_id }),
    ...(event.interrupted ? { interrupted: true } : {}),
    ...(event.partial ? { partial: event.partial } : {}),
  };
  // The history API keeps it as a user turn after the run (loaded first, it gives way): the log shows where it landed.
  const items = state.items.filter((item) => !(item.kind === 'user' && item.id.startsWith('h') && item.order > steer.seq && isCopyOf(item.content, steer)));
  return { state: withoutPending({ ...state, items }, event.message_id), run: { ...run, steers: [...(run.steers ?? []), steer] } };
}

/** Whether a user message of the history API (after `afterSeq`) is a steer the log shows already: the model read it after a preamble. */
export function isSteerCopy(state: ViewState, content: string, afterSeq: number): boolean {
  return Object.values(state.runs).some((run) => run.steers?.some((steer) => steer.seq <= afterSeq && isCopyOf(content, steer)));
}

function isCopyOf(content: string, steer: SteerView): boolean {
  return content === steer.content || content.endsWith(`\n${steer.content}`);
}

/** One branch was stopped (agent_node_stopped): its receipt is kept by its node id. */
export function branchStopped(run: RunView, event: AgentNodeStopped): RunView {
  if (event.node_id === undefined) return run;
  const nodeId = event.node_id;
  const stop = { seq: event.seq, step: event.step, calls: event.calls, ...(event.by ? { by: event.by.name } : {}) };
  // What the branch still ran was cut off with it; the rest of the run goes on.
  const branches = run.branches.map((branch) => (branch.nodeId === nodeId ? { ...branch, steps: branch.steps.map(settleStep) } : branch));
  return { ...run, branches, stoppedBranches: { ...run.stoppedBranches, [nodeId]: stop } };
}

/**
 * The messages that wait for a run to take them (steers and interrupts, to the run or to one of its
 * branches); one that names no run (as the session lists them on attach) is the active run's.
 */
export function waitingSteers(pending: PendingMessageView[], runId: string, activeRunId: string | undefined): PendingMessageView[] {
  return pending.filter((message) => message.delivery !== 'queue' && (message.runId ?? activeRunId) === runId);
}

/** The waiting messages no run shows: queued ones (they wait for the run to end) and any whose run this view does not hold. */
export function messagesAfterRuns(state: ViewState): PendingMessageView[] {
  return state.pending.filter((message) => {
    const runId = message.runId ?? state.activeRunId;
    return message.delivery === 'queue' || runId === undefined || !state.runs[runId];
  });
}

/** Where a message for one branch of a run of `strategy` landed, in words: "reached task 1.2" (its step is the run's, not the branch's). */
export function branchPlace(steer: SteerView, strategy: string | undefined): string {
  return `reached ${branchKind(strategy, steer.nodeId!)} ${steer.nodeId}${steer.interrupted || steer.delivery === 'interrupt' ? ', cutting its model call' : ''}`;
}

/** Where a steer landed, in words: "applied at step 3", "interrupted step 2". */
export function steerPlace(steer: SteerView, unit = 'step'): string {
  return steer.interrupted || steer.delivery === 'interrupt' ? `interrupted ${unit} ${steer.step}` : `applied at ${unit} ${steer.step}`;
}
