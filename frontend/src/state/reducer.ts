import { type HistoryMessage, refusesChat, type ServerEvent, type SessionEvent, type TokenUsage } from '@stepwise/shared-types';
import { allSteps, emptyRun, mapRunSteps, settleRun, updateRunStep, withBranch } from './run-tree.ts';
import {
  branchStopped,
  isSteerCopy,
  messageQueued,
  messageSent,
  pendingView,
  queuedPlainTurn,
  queuedTurn,
  refusedMessage,
  type SteeringAction,
  steerApplied,
  withoutPending,
} from './steering.ts';
import { strategyEvent } from './strategy-events.ts';
import type { TimelineEvent, ChatItem, ConnectionState, RunSpendingView, RunView, StepView, StrategyUpdate, ToolCallView, ViewState } from './view-state.ts';

/** Everything that changes what the web app shows. */
export type Action =
  | { kind: 'server_event'; event: ServerEvent | { type: string } }
  | { kind: 'connection'; state: ConnectionState }
  | { kind: 'user_message'; id: string; content: string; attachments?: string[] }
  | { kind: 'history_loaded'; sessionId: string; messages: HistoryMessage[] }
  | { kind: 'stop_requested' }
  /** A run was asked to continue: the session is busy until the new run ends (or is refused). */
  | { kind: 'resume_requested' }
  /** An answer went out: to the question with `questionId`, or (without one) to every question the run waits on. */
  | { kind: 'answer_sent'; runId: string; answer: string; questionId?: string }
  | { kind: 'approval_sent'; runId: string; questionId: string }
  | { kind: 'dismiss_notice' }
  | { kind: 'notice'; code: string; message: string }
  | { kind: 'upload_started'; name: string }
  | { kind: 'upload_finished'; name: string; error?: string }
  /** A file attached for the next message is taken off it (it stays in the chat's files). */
  | { kind: 'detach'; name: string }
  | SteeringAction;

type Logged = Extract<ServerEvent, { seq: number }>;

/** The web app's one reducer: pure, event by event. */
export function reduce(state: ViewState, action: Action): ViewState {
  switch (action.kind) {
    case 'connection':
      return { ...state, connection: action.state };
    case 'user_message':
      return {
        ...state,
        busy: true,
        stopping: false,
        notice: undefined,
        attached: [],
        items: insertItem(state.items, {
          kind: 'user',
          id: action.id,
          content: action.content,
          order: state.lastSeq + 0.5,
          ...(action.attachments?.length ? { attachments: action.attachments } : {}),
        }),
      };
    case 'history_loaded': {
      // Messages come from the history API; the replayed log brings everything else.
      if (state.session && state.session.session_id !== action.sessionId) return state;
      let items = state.items;
      for (const message of action.messages) {
        if (message.role !== 'user') continue;
        const order = message.after_seq + 0.5;
        // A queued message's turn comes from its run's start (agent_start names it), a steer's from where it landed.
        if (items.some((item) => item.kind === 'user' && item.order === order && item.content === message.content)) continue;
        if (isSteerCopy(state, message.content, message.after_seq)) continue;
        items = insertItem(items, { kind: 'user', id: `h${order}`, content: message.content, order });
      }
      return { ...state, items };
    }
    case 'stop_requested':
      return state.busy ? { ...state, stopping: true } : state;
    case 'resume_requested':
      return { ...state, busy: true, stopping: false };
    case 'approval_sent':
      return updateRun(state, action.runId, (run) =>
        mapRunSteps(run, (step) => {
          const tool = step.tools.find((each) => each.approval?.questionId === action.questionId && each.approval.status === 'pending');
          return tool ? upsertTool(step, tool.id, { name: tool.name, approval: { ...tool.approval!, status: 'sent' } }) : step;
        }),
      );
    case 'answer_sent':
      return updateRun(state, action.runId, (run) =>
        mapRunSteps(run, (step) =>
          step.question?.status === 'pending' && (action.questionId === undefined || step.question.questionId === action.questionId)
            ? { ...step, question: { ...step.question, status: 'answered', answer: action.answer } }
            : step,
        ),
      );
    case 'dismiss_notice':
      return { ...state, notice: undefined };
    case 'notice':
      return { ...state, notice: { code: action.code, message: action.message } };
    case 'upload_started':
      return { ...state, uploading: [...state.uploading, action.name] };
    case 'upload_finished': {
      const index = state.uploading.indexOf(action.name);
      const uploading = index < 0 ? state.uploading : state.uploading.toSpliced(index, 1);
      if (action.error) return { ...state, uploading, notice: { code: 'upload_failed', message: action.error } };
      return { ...state, uploading, attached: [...state.attached.filter((name) => name !== action.name), action.name] };
    }
    case 'detach':
      return { ...state, attached: state.attached.filter((name) => name !== action.name) };
    case 'message_sent':
    case 'cancel_requested':
      return messageSent(state, action);
    case 'server_event':
      return applyEvent(state, action.event);
    default: {
      const unexpected: never = action;
      return unexpected;
    }
  }
}

function applyEvent(state: ViewState, event: ServerEvent | { type: string }): ViewState {
  if (!isKnown(event)) return state;
  if (event.type === 'session') return applySession(state, event);
  if (event.type === 'tools_changed') {
    return state.session ? { ...state, session: { ...state.session, tools: event.tools, mcp_servers: event.mcp_servers } } : state;
  }
  if (event.type === 'settings_changed') {
    if (!state.session) return state;
    const { type: _type, ...now } = event;
    const session = { ...state.session, ...now };
    // The demo model has no endpoint: an endpoint cleared in the app goes from the view too.
    if (now.model_endpoint === undefined) delete session.model_endpoint;
    return { ...state, session };
  }
  if (event.type === 'model_health') {
    return state.session ? { ...state, session: { ...state.session, model_health: event.health } } : state;
  }
  if (event.type === 'message_queued') return messageQueued(state, event);
  if (event.type === 'message_cancelled') return withoutPending(state, event.message_id);
  if (event.type === 'error' && !('seq' in event)) {
    const refusedSteer = refusedMessage(state, event);
    if (refusedSteer) return refusedSteer;
    // An error that refuses a chat message means nothing will answer it.
    const refused = refusesChat(event.code) && !state.activeRunId && state.streamingAnswer === undefined;
    const noticed = { ...state, notice: { code: event.code, message: event.message }, ...(refused ? { busy: false, stopping: false } : {}) };
    // A refused approval (arguments that do not fit, an answer it does not take) still waits: offer it again.
    return event.code === 'invalid_arguments' || event.code === 'invalid_answer' ? reopenSentApprovals(noticed) : noticed;
  }
  if (event.type === 'assistant_delta') {
    if (event.run_id) return state;
    const next = withTurn(queuedPlainTurn(state));
    return { ...next, busy: true, streamingAnswer: (next.streamingAnswer ?? '') + event.delta };
  }
  if (event.type === 'agent_update' && (event.update_type === 'agent_reason_delta' || event.update_type === 'agent_observe_delta')) {
    if (!event.run_id || state.runs[event.run_id]?.complete) return state;
    const field = event.update_type === 'agent_reason_delta' ? 'reason' : 'observe';
    return updateStep(state, event.run_id, event.step, event.node_id, (step) =>
      step[`${field}Done`] ? step : { ...step, [field]: step[field] + event.delta },
    );
  }
  if (event.type === 'tool_progress') {
    const runId = event.run_id;
    if (!runId || state.runs[runId]?.complete) return state;
    const progress = {
      value: event.progress,
      ...(event.total === undefined ? {} : { total: event.total }),
      ...(event.message === undefined ? {} : { message: event.message }),
    };
    return updateStep(state, runId, event.step, event.node_id, (step) => {
      const tool = step.tools.find((candidate) => candidate.id === event.tool_call_id);
      return tool && tool.status !== 'running' ? step : upsertTool(step, event.tool_call_id, { name: event.tool_name, progress });
    });
  }
  if (!('seq' in event)) return state;
  if (event.seq <= state.lastSeq) return state; // replayed or duplicated
  return applyLogged({ ...state, lastSeq: event.seq }, event);
}

function applySession(state: ViewState, session: SessionEvent): ViewState {
  // On every (re)attach the server says which messages still wait.
  const pending = (session.pending_messages ?? []).map(pendingView);
  // A different session (the server did not know ours) starts a fresh view.
  if (state.session && state.session.session_id !== session.session_id) {
    const fresh = { lastSeq: 0, items: [], runs: {}, files: [], activeRunId: undefined, busy: false, stopping: false, streamingAnswer: undefined };
    return { ...state, ...fresh, session, pending };
  }
  return { ...state, session, pending };
}

function applyLogged(state: ViewState, event: Logged): ViewState {
  const applied = applyLoggedEvent(state, event);
  const runId = event.run_id;
  const found = runId ? applied.runs[runId] : undefined;
  if (!found) return applied;
  // A parked run's next event (its answer taken, its ending) says it left the wait.
  const { parked: _parked, ...unparked } = found;
  const run = found.parked && !(event.type === 'agent_update' && event.update_type === 'agent_parked') ? unparked : found;
  return { ...applied, runs: { ...applied.runs, [run.id]: { ...run, timeline: [...(run.timeline ?? []), timelineEvent(event)] } } };
}

/** An event in brief, for the run's timeline. */
function timelineEvent(event: Logged): TimelineEvent {
  const kind = event.type === 'agent_update' ? event.update_type : event.type;
  const record: TimelineEvent = { seq: event.seq, ts: event.ts, kind, ...(event.node_id ? { nodeId: event.node_id } : {}) };
  if ('step' in event && typeof event.step === 'number') record.step = event.step;
  if ('tool_call_id' in event && typeof event.tool_call_id === 'string') record.toolCallId = event.tool_call_id;
  if ('tool_name' in event && typeof event.tool_name === 'string') record.tool = event.tool_name;
  if ('duration_ms' in event && typeof event.duration_ms === 'number') record.durationMs = event.duration_ms;
  if (event.type === 'agent_update' && event.update_type === 'agent_usage') {
    Object.assign(record, { purpose: event.purpose, promptTokens: event.prompt_tokens, completionTokens: event.completion_tokens, costUsd: event.cost_usd });
  }
  if (event.type === 'agent_update' && (event.update_type === 'agent_stage_start' || event.update_type === 'agent_stage_complete')) record.stage = event.stage;
  return record;
}

function applyLoggedEvent(state: ViewState, event: Logged): ViewState {
  const runId = event.run_id;
  switch (event.type) {
    case 'assistant_message': {
      const item: ChatItem = { kind: 'assistant', id: `a${event.seq}`, content: event.content, order: event.seq, ...(runId ? { runId } : {}) };
      return { ...state, streamingAnswer: undefined, items: insertItem(state.items, item) };
    }
    case 'response_complete': {
      const next = { ...state, busy: false, stopping: false, streamingAnswer: undefined, activeRunId: undefined };
      const replayed = event.seq <= (state.session?.last_seq ?? 0);
      return runId ? updateRun(next, runId, (run) => ({ ...run, complete: true, replayed })) : next;
    }
    case 'tool_start':
      if (!runId) return state;
      return updateStep(state, runId, event.step, event.node_id, (step) =>
        upsertTool(step, event.tool_call_id, { name: event.tool_name, arguments: event.arguments, status: 'running' }),
      );
    case 'tool_complete':
      if (!runId) return state;
      return updateStep(state, runId, event.step, event.node_id, (step) =>
        upsertTool(step, event.tool_call_id, {
          name: event.tool_name,
          ...settledApproval(step, event.tool_call_id),
          ...(event.arguments ? { arguments: event.arguments, edited: true } : {}),
          status: 'done',
          result: event.result,
          ...(event.duration_ms === undefined ? {} : { durationMs: event.duration_ms }),
        }),
      );
    case 'tool_error':
      if (!runId) return state;
      return updateStep(state, runId, event.step, event.node_id, (step) =>
        upsertTool(step, event.tool_call_id, {
          name: event.tool_name,
          ...settledApproval(step, event.tool_call_id),
          status: 'error',
          error: event.error,
          ...(event.duration_ms === undefined ? {} : { durationMs: event.duration_ms }),
        }),
      );
    case 'agent_update': {
      // The todo list is the session's: a run's change and a person's edit (no run id) alike.
      const withTodos = event.update_type === 'agent_todos' ? { ...state, todos: event.todos } : state;
      return runId ? applyAgentUpdate(withTodos, runId, event) : withTodos;
    }
    case 'file_saved': {
      const file = { ...event.file, source: event.source };
      return { ...state, files: [...state.files.filter((existing) => existing.name !== file.name), file] };
    }
    case 'file_deleted':
      return {
        ...state,
        files: state.files.filter((existing) => existing.name !== event.name),
        attached: state.attached.filter((name) => name !== event.name),
      };
    case 'error': {
      // A failed answer: shown where the answer would have been, and nothing streams any more.
      const item: ChatItem = { kind: 'failure', id: `e${event.seq}`, code: event.code, message: event.message, order: event.seq };
      const next = { ...state, streamingAnswer: undefined, items: insertItem(state.items, item) };
      const run = runId ? state.runs[runId] : undefined;
      return run && !run.end
        ? updateRun(next, run.id, (current) => settleRun({ ...current, endedAt: event.ts, end: { kind: 'failed', message: event.message } }))
        : next;
    }
    case 'snapshot_saved':
      return {
        ...state,
        snapshotLabels: { ...state.snapshotLabels, [event.snapshot_id]: event.label },
        notice: { code: 'snapshot_saved', message: `Snapshot saved: ${event.label}`, tone: 'success' },
      };
    case 'session_rolled_back': {
      // Everything between the point rolled back to and now left the model's history: fold it.
      const label = rollbackLabel(event.snapshot_id, state.snapshotLabels);
      const items = state.items.map((item) => (item.order > event.to_seq && item.order < event.seq ? { ...item, rolledBack: true } : item));
      const divider: ChatItem = { kind: 'rollback', id: `r${event.seq}`, label, toSeq: event.to_seq, order: event.seq };
      // Rewound to a step of a run: that run's later steps are folded too.
      const rewound = /^step:([^:]+):(\d+)$/.exec(event.snapshot_id);
      const run = rewound ? state.runs[rewound[1]!] : undefined;
      const runs = run ? { ...state.runs, [run.id]: { ...run, rewoundTo: Number(rewound![2]) } } : state.runs;
      return { ...state, runs, items: insertItem(items, divider) };
    }
    default: {
      // A newer server may send events this app does not know: they change nothing.
      const _unknown: never = event;
      return state;
    }
  }
}

/** What a rollback went back to, in words. */
function rollbackLabel(snapshotId: string, labels: Record<string, string> | undefined): string {
  const step = /^step:[^:]+:(\d+)$/.exec(snapshotId);
  if (step) return `the end of step ${step[1]}`;
  const label = labels?.[snapshotId];
  return label ? `“${label}”` : 'a snapshot';
}

function applyAgentUpdate(state: ViewState, runId: string, event: Extract<Logged, { type: 'agent_update' }>): ViewState {
  switch (event.update_type) {
    case 'agent_start': {
      const withRun = ensureRun(withTurn(queuedTurn(state, event)), runId);
      return {
        ...updateRun(withRun, runId, (run) => ({
          ...run,
          maxSteps: event.max_steps,
          startedAt: event.ts,
          ...(event.strategy ? { strategy: event.strategy } : {}),
          ...(event.options ? { options: event.options } : {}),
          ...(event.resumed_from ? { resumedFrom: event.resumed_from } : {}),
          ...(event.trace_id ? { traceId: event.trace_id } : {}),
        })),
        activeRunId: runId,
        busy: true,
      };
    }
    case 'agent_turn_start':
      return updateStep(state, runId, event.step, event.node_id, (step) => step);
    case 'agent_reason':
      return updateStep(state, runId, event.step, event.node_id, (step) => ({ ...step, reason: event.content, reasonDone: true }));
    case 'agent_observe':
      return updateStep(state, runId, event.step, event.node_id, (step) => ({ ...step, observe: event.content, observeDone: true }));
    case 'agent_request_input':
      // An approval belongs to its tool call (several may wait at once, one per parallel call).
      if (event.kind === 'approval' && event.tool_call_id && event.question_id) {
        const approval = { questionId: event.question_id, status: 'pending' as const, ...(event.deadline ? { deadline: event.deadline } : {}) };
        return updateStep(state, runId, event.step, event.node_id, (step) =>
          upsertTool(step, event.tool_call_id!, { name: event.tool ?? 'tool', ...(event.arguments ? { arguments: event.arguments } : {}), approval }),
        );
      }
      return updateStep(state, runId, event.step, event.node_id, (step) => ({
        ...step,
        question: {
          text: event.question,
          status: 'pending',
          ...(event.tool_call_id ? { toolCallId: event.tool_call_id } : {}),
          ...(event.deadline ? { deadline: event.deadline } : {}),
          ...(event.question_id ? { questionId: event.question_id } : {}),
          ...(event.choices?.length ? { choices: event.choices } : {}),
        },
      }));
    case 'agent_request_input_timeout':
      return updateStep(state, runId, event.step, event.node_id, (step) => {
        if (step.question?.status === 'pending') return { ...step, question: { ...step.question, status: 'timed_out' } };
        // An approval nobody answered: its call was denied (or the run stops).
        const waiting = step.tools.find((tool) => tool.approval && (tool.approval.status === 'pending' || tool.approval.status === 'sent'));
        return waiting ? upsertTool(step, waiting.id, { name: waiting.name, approval: { ...waiting.approval!, status: 'timed_out' } }) : step;
      });
    case 'agent_parked':
      return updateRun(state, runId, (run) => ({ ...run, parked: { questionId: event.question_id, since: event.ts } }));
    case 'agent_model_fallback': {
      const fallback = { purpose: event.purpose, model: event.model, fromModel: event.from_model, reason: event.failures[0]?.reason ?? '' };
      return updateStep(state, runId, event.step, event.node_id, (step) => ({ ...step, fallbacks: [...(step.fallbacks ?? []), fallback] }));
    }
    case 'agent_usage':
      return event.usage ? updateRun(state, runId, (run) => ({ ...run, spending: spendingView(event.usage!, event.run_cost_usd) })) : state;
    case 'agent_stopped':
      return updateRun(state, runId, (run) =>
        settleRun({
          ...run,
          ...(event.usage ? { spending: spendingView(event.usage, event.cost_usd ?? null) } : {}),
          endedAt: event.ts,
          end:
            event.reason === 'input_timeout'
              ? { kind: 'input_timeout' }
              : { kind: 'stopped', reason: event.reason ?? 'user', ...(event.calls?.length ? { calls: event.calls } : {}) },
        }),
      );
    case 'agent_error':
      return updateRun(state, runId, (run) =>
        settleRun({
          ...run,
          ...(event.usage ? { spending: spendingView(event.usage, event.cost_usd ?? null) } : {}),
          endedAt: event.ts,
          end: { kind: 'failed', message: event.message },
        }),
      );
    case 'agent_completion':
      return updateRun(state, runId, (run) => ({
        ...run,
        ...(event.usage ? { spending: spendingView(event.usage, event.cost_usd ?? null) } : {}),
        endedAt: event.ts,
        end:
          event.reason === 'max_steps'
            ? { kind: 'max_steps', steps: event.steps }
            : event.reason === 'unresolved'
              ? { kind: 'unresolved', steps: event.steps, summary: event.summary ?? 'the run found no answer it could stand behind.' }
              : { kind: 'answered', steps: event.steps, ...(event.reason && event.reason !== 'answered' ? { reason: event.reason } : {}) },
      }));
    case 'agent_steer': {
      const applied = steerApplied(state, ensureRun(state, runId).runs[runId]!, event);
      return { ...applied.state, runs: { ...applied.state.runs, [runId]: applied.run } };
    }
    case 'agent_node_stopped':
      return updateRun(state, runId, (run) => branchStopped(run, event));
    default: {
      // A strategy's own events (a plan, to-dos, a verdict…) are kept typed for the run's strategy
      // panel; update types this app does not know yet (a newer server's) arrive here too, kept as they came.
      const update: StrategyUpdate = event;
      return updateRun(state, runId, (run) => {
        const added = strategyEvent(update);
        const tree = added.nodeId === undefined ? run : withBranch(run, added.nodeId);
        return { ...tree, strategyEvents: [...tree.strategyEvents, added] };
      });
    }
  }
}

/** A run's totals as the wire sends them, as the run view keeps them. */
function spendingView(usage: TokenUsage, costUsd: number | null): RunSpendingView {
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    cachedTokens: usage.cached_tokens,
    reasoningTokens: usage.reasoning_tokens,
    costUsd,
  };
}

/** The tool calls waiting for a person's approval, in every run still going. */
export function pendingApprovals(
  state: ViewState,
): Array<{ runId: string; toolCallId: string; questionId: string; tool: string; arguments: Record<string, unknown>; deadline?: string }> {
  const waiting: ReturnType<typeof pendingApprovals> = [];
  for (const run of Object.values(state.runs)) {
    if (run.complete || run.end) continue;
    for (const { step } of allSteps(run)) {
      for (const tool of step.tools) {
        if (tool.approval?.status !== 'pending') continue;
        const { questionId, deadline } = tool.approval;
        waiting.push({ runId: run.id, toolCallId: tool.id, questionId, tool: tool.name, arguments: tool.arguments, ...(deadline ? { deadline } : {}) });
      }
    }
  }
  return waiting;
}

/** The question the run is waiting on, if any. */
export function pendingQuestion(
  state: ViewState,
): { runId: string; step: number; text: string; deadline?: string; questionId?: string; nodeId?: string; choices?: string[] } | undefined {
  for (const run of Object.values(state.runs)) {
    if (run.complete || run.end) continue;
    for (const { step, nodeId } of allSteps(run)) {
      const question = step.question;
      if (question?.status === 'pending') {
        return {
          runId: run.id,
          step: step.step,
          text: question.text,
          ...(question.deadline ? { deadline: question.deadline } : {}),
          ...(question.questionId ? { questionId: question.questionId } : {}),
          ...(question.choices ? { choices: question.choices } : {}),
          ...(nodeId === undefined ? {} : { nodeId }),
        };
      }
    }
  }
  return undefined;
}

/**
 * True while a sent message waits for the first sign of its answer (no stream, no run, no failure
 * yet): the conversation shows "Thinking…" in the answer's place.
 */
export function awaitingAnswer(state: ViewState): boolean {
  return state.busy && !state.activeRunId && state.streamingAnswer === undefined && state.items.at(-1)?.kind === 'user';
}

function isKnown(event: ServerEvent | { type: string }): event is ServerEvent {
  return typeof event === 'object' && event !== null && typeof event.type === 'string';
}

function ensureRun(state: ViewState, runId: string): ViewState {
  if (state.runs[runId]) return state;
  const run: RunView = emptyRun(runId);
  return {
    ...state,
    runs: { ...state.runs, [runId]: run },
    // lastSeq is already the seq of the event that brought the run.
    items: insertItem(state.items, { kind: 'run', id: `r${runId}`, runId, order: state.lastSeq }),
  };
}

/** The state with a queued message's user turn in the conversation, when it has one. */
function withTurn({ state, turn }: { state: ViewState; turn?: ChatItem }): ViewState {
  return turn ? { ...state, items: insertItem(state.items, turn) } : state;
}

/** Inserts an item in order; items of equal order keep their arrival order. */
function insertItem(items: ChatItem[], item: ChatItem): ChatItem[] {
  const index = items.findIndex((existing) => existing.order > item.order);
  return index < 0 ? [...items, item] : [...items.slice(0, index), item, ...items.slice(index)];
}

function updateRun(state: ViewState, runId: string, change: (run: RunView) => RunView): ViewState {
  const withRun = ensureRun(state, runId);
  return { ...withRun, runs: { ...withRun.runs, [runId]: change(withRun.runs[runId]!) } };
}

/** Changes a step of a run: outside any branch, or in the branch `nodeId` names. */
function updateStep(state: ViewState, runId: string, stepNumber: number, nodeId: string | undefined, change: (step: StepView) => StepView): ViewState {
  return updateRun(state, runId, (run) => updateRunStep(run, stepNumber, nodeId, change));
}

function reopenSentApprovals(state: ViewState): ViewState {
  let next = state;
  for (const run of Object.values(state.runs)) {
    if (run.end) continue;
    next = updateRun(next, run.id, (current) =>
      mapRunSteps(current, (step) => {
        const sent = step.tools.find((tool) => tool.approval?.status === 'sent');
        return sent ? upsertTool(step, sent.id, { name: sent.name, approval: { ...sent.approval!, status: 'pending' } }) : step;
      }),
    );
  }
  return next;
}

/** A call's approval once the call ran or was denied: settled (a timed-out one stays so). */
function settledApproval(step: StepView, id: string): Partial<ToolCallView> {
  const approval = step.tools.find((tool) => tool.id === id)?.approval;
  return approval && approval.status !== 'timed_out' ? { approval: { ...approval, status: 'settled' } } : {};
}

function upsertTool(step: StepView, id: string, fields: Partial<ToolCallView> & { name: string }): StepView {
  const index = step.tools.findIndex((tool) => tool.id === id);
  if (index < 0) return { ...step, tools: [...step.tools, { id, arguments: {}, status: 'running', ...fields }] };
  const current = step.tools[index]!;
  // A late tool_start must not undo a result that already arrived.
  const status = fields.status === 'running' && current.status !== 'running' ? current.status : (fields.status ?? current.status);
  return { ...step, tools: step.tools.with(index, { ...current, ...fields, status }) };
}
