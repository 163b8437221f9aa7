import type { AgentSteer, AgentUpdate, Delivery, SessionEvent, SessionFile, StoppedCall, Todo } from '@stepwise/shared-types';

/** The socket's state as the user sees it. */
export type ConnectionState = 'connecting' | 'live' | 'reconnecting';

/** One tool call in a step. */
export interface ToolCallView {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  status: 'running' | 'done' | 'error' | 'stopped';
  result?: unknown;
  error?: string;
  durationMs?: number;
  /** The latest progress a long call reported, while it runs. */
  progress?: { value: number; total?: number; message?: string };
  /** True when a person edited the arguments before approving (they show as it ran). */
  edited?: boolean;
  /** A call that waits for (or waited for) a person's approval. */
  approval?: ApprovalView;
}

/** An approval of a tool call: pending until a person (or its deadline) settles it. */
export interface ApprovalView {
  questionId: string;
  status: 'pending' | 'sent' | 'settled' | 'timed_out';
  deadline?: string;
}

/** A question the agent asked in a step. */
export interface QuestionView {
  text: string;
  toolCallId?: string;
  status: 'pending' | 'answered' | 'timed_out' | 'stopped';
  answer?: string;
  /** When the question stops waiting (ISO-8601), when the server set a limit. */
  deadline?: string;
  /** The server's id for it, sent back with the answer. */
  questionId?: string;
  /** Answers offered as buttons (a confirmation's "Yes" / "No"). */
  choices?: string[];
}

/** One reason → act → observe step. */
export interface StepView {
  step: number;
  reason: string;
  reasonDone: boolean;
  tools: ToolCallView[];
  question?: QuestionView;
  observe: string;
  observeDone: boolean;
  /** Calls of this step a fallback model answered (the route's first model failed). */
  fallbacks?: FallbackView[];
}

/** A call answered by a fallback model: which answered, which it was meant for, and why that one failed. */
export interface FallbackView {
  purpose: string;
  model: string;
  fromModel: string;
  reason: string;
}

/** A branch of a run (a plan step "3", a research task "1.2"): events with its `node_id`, in steps of its own. */
export interface BranchView {
  nodeId: string;
  steps: StepView[];
}

/** The agent_update types the run view takes in itself: its start, steps, questions, spending and ending. */
export type RunUpdateType =
  | 'agent_start'
  | 'agent_turn_start'
  | 'agent_reason'
  | 'agent_observe'
  | 'agent_request_input'
  | 'agent_request_input_timeout'
  | 'agent_parked'
  | 'agent_usage'
  | 'agent_model_fallback'
  | 'agent_stopped'
  | 'agent_error'
  | 'agent_completion'
  | 'agent_steer'
  | 'agent_node_stopped';

/** Every other agent_update of the contract is a strategy's own event (a plan, to-dos, a stage, a verdict…). */
export type StrategyUpdate = Exclude<AgentUpdate, { update_type: RunUpdateType }>;
/** The update types of strategies' own events that shared-types describes, e.g. "agent_plan". */
export type StrategyUpdateType = StrategyUpdate['update_type'];

/** Where a strategy event sits: its place in the log, its time, and the branch it belongs to when it names one. */
interface StrategyEventPlace {
  seq: number;
  ts: string;
  /** The branch it belongs to, when it names one. */
  nodeId?: string;
}

/** A strategy event of an update type shared-types describes, checked against its schema: `event` is the update, typed. */
export interface KnownStrategyEventOf<E extends StrategyUpdate> extends StrategyEventPlace {
  updateType: E['update_type'];
  event: E;
  fields?: never;
}

/** A known strategy event of the update type `K` (of any known type when `K` is left out), narrowed by `updateType`. */
export type KnownStrategyEvent<K extends StrategyUpdateType = StrategyUpdateType> = K extends StrategyUpdateType
  ? KnownStrategyEventOf<Extract<StrategyUpdate, { update_type: K }>>
  : never;

/**
 * A strategy event this app has no type for (a newer server's update type, or a known one that did
 * not fit its schema): kept as it came, so that the generic list still shows it.
 */
export interface UnknownStrategyEvent extends StrategyEventPlace {
  /** The event's update_type, e.g. "agent_hypothesis". */
  updateType: string;
  /** Every other field, unchecked (type, update_type, seq, ts, run_id and node_id left out). */
  fields: Record<string, unknown>;
  event?: never;
}

/**
 * A strategy's own event (a plan, a to-do list, a stage, a verdict…), for a strategy panel or the
 * generic list: typed by its update type when this app knows it (`event` is set), else its fields.
 */
export type StrategyEventView = KnownStrategyEvent | UnknownStrategyEvent;

/** How a run ended, once it has. `reason` is a strategy's own ending (e.g. "workflow_complete"). */
export type RunEnd =
  | { kind: 'answered'; steps: number; reason?: string }
  /** It ended without an answer that rests on its tools: `summary` says what could not be done. */
  | { kind: 'unresolved'; steps: number; summary: string }
  | { kind: 'max_steps'; steps: number }
  | { kind: 'stopped'; reason: string; calls?: StoppedCall[] }
  | { kind: 'input_timeout' }
  | { kind: 'failed'; message: string };

/**
 * One agent run, as its timeline shows it: a tree of steps outside any branch (roa), branches with
 * steps of their own, and the strategy's own events.
 */
export interface RunView {
  id: string;
  /** The strategy that runs it and its options after defaults (from agent_start; absent in older logs). */
  strategy?: string;
  options?: Record<string, unknown>;
  /** The run this one continues (its earlier steps are shown there). */
  resumedFrom?: string;
  /** The run's OpenTelemetry trace id, when the server traces runs. */
  traceId?: string;
  /** The run's budget: the most steps it may take. */
  maxSteps: number;
  /** When the run started and ended (ISO-8601, from the events' `ts`). */
  startedAt?: string;
  endedAt?: string;
  /** Steps outside any branch. */
  steps: StepView[];
  /** Branches by node id, in their natural order ("1.2" before "1.10"). */
  branches: BranchView[];
  /** The strategy's own events, in log order. */
  strategyEvents: StrategyEventView[];
  end?: RunEnd;
  /**
   * Set while the run is parked: nobody answered its question in time, and it waits for an answer
   * (holding nothing on the server); an answer resumes it, a stop ends it.
   */
  parked?: { questionId: string; since: string };
  /** True once response_complete arrived. */
  complete: boolean;
  /** True when the run ended before this page joined: it was rebuilt from the log. */
  replayed?: boolean;
  /** Its tokens and cost so far (agent_usage after each model call, the totals on its ending). */
  spending?: RunSpendingView;
  /** The step the conversation was rewound to ("Rewind to here"): the steps after it left the history and are folded. */
  rewoundTo?: number;
  /** The run's logged events in brief, in log order: what its timeline and cost chart are drawn from. */
  timeline?: TimelineEvent[];
  /** Messages a person sent during the run that reached it (agent_steer), in log order. */
  steers?: SteerView[];
  /** Branches stopped on their own (agent_node_stopped), by node id: the latest stop of each. */
  stoppedBranches?: Record<string, BranchStopView>;
}

/** A message sent during a run that reached it: where it landed (a step, a branch) and what it cut. */
export interface SteerView {
  messageId: string;
  seq: number;
  step: number;
  content: string;
  delivery: AgentSteer['delivery'];
  nodeId?: string;
  /** It cut a model call (an interrupt), whose words so far were `partial`. */
  interrupted?: boolean;
  partial?: string;
}

/** One branch of a run stopped on its own: at which step, by whom, and its stop receipt. */
export interface BranchStopView {
  seq: number;
  step: number;
  by?: string;
  calls: StoppedCall[];
}

/**
 * A message sent during a run that has not reached it yet: `sending` until the server stored it
 * (message_queued), `waiting` for its boundary or its run, `cancelling` once withdrawn until the
 * server says so. `id` is the server's message id once known, a local one before.
 */
export interface PendingMessageView {
  id: string;
  status: 'sending' | 'waiting' | 'cancelling';
  delivery: Delivery;
  content: string;
  /** Its place among the session's waiting messages, from 1 (once stored). */
  position?: number;
  /** The branch it is for (a research task), when it names one. */
  nodeId?: string;
  /** The run it was sent to. */
  runId?: string;
}

/** One logged event of a run, as much as its timeline needs. */
export interface TimelineEvent {
  seq: number;
  ts: string;
  kind: string;
  nodeId?: string;
  step?: number;
  toolCallId?: string;
  tool?: string;
  durationMs?: number;
  /** Model calls (agent_usage): the call's purpose, tokens and cost. */
  purpose?: string;
  promptTokens?: number;
  completionTokens?: number;
  costUsd?: number | null;
  /** Solver stages. */
  stage?: string;
}

/** A run's tokens and its cost in USD (null when a call's model had no known price). */
export interface RunSpendingView {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
  costUsd: number | null;
}

/**
 * One item of the conversation. `order` places it: a logged item's seq, and for a user message
 * the seq it was sent after plus one half (its response's events come after it).
 */
export type ChatItem = {
  order: number;
  /** Dropped from the model's history by a later rollback: shown folded under its divider. */
  rolledBack?: boolean;
} /** `queued`: sent during an earlier run, it started this one when that ended. */ & (
  | { kind: 'user'; id: string; content: string; attachments?: string[]; queued?: boolean }
  | { kind: 'assistant'; id: string; content: string; runId?: string }
  | { kind: 'run'; id: string; runId: string }
  /** A plain chat answer that failed: kept in the conversation, also after a reload. */
  | { kind: 'failure'; id: string; code: string; message: string }
  /** The session was rolled back to a snapshot (or a step's end); what came after it is folded. */
  | { kind: 'rollback'; id: string; label: string; toSeq: number }
);

/** The chat's latest run (folded by a rollback or not), if it has one. */
export function latestRunId(items: ChatItem[]): string | undefined {
  return items.findLast((item) => item.kind === 'run')?.runId;
}

/** One todo of the session's list. */
export type TodoView = Todo;

/** A file in the session's folder (its name, size and time as shared-types' SessionFile), with where it came from. */
export interface FileView extends SessionFile {
  /** "user" (uploaded), "agent", or the MCP server that returned it. */
  source: string;
}

/** A problem to show the user (a rejected message, a failed answer). */
export interface Notice {
  code: string;
  message: string;
  /** A success said in passing ("Snapshot saved"), not a refusal or a failure. */
  tone?: 'success';
}

/** Everything the web app shows; only the reducer makes new ones. */
export interface ViewState {
  connection: ConnectionState;
  session?: SessionEvent;
  /** The highest seq applied; replayed events at or below it are ignored. */
  lastSeq: number;
  items: ChatItem[];
  runs: Record<string, RunView>;
  /** The run in progress, if any. */
  activeRunId?: string;
  /** True from sending a chat message until its response_complete. */
  busy: boolean;
  /** True after Stop was pressed, until the run ends. */
  stopping: boolean;
  /** A plain chat answer while it streams. */
  streamingAnswer?: string;
  notice?: Notice;
  /** Labels of the snapshots this session saved, by id (for rollback dividers). */
  snapshotLabels?: Record<string, string>;
  /** The session's files, newest last. */
  files: FileView[];
  /** The session's todo list (autonomous runs keep it; a person may edit it between runs), once one was sent. */
  todos?: TodoView[];
  /** Names of files being uploaded. */
  uploading: string[];
  /** Files this tab attached since its last message: they go with the next one (images are shown to the model). */
  attached: string[];
  /** Messages sent during a run that wait (steers, queued messages), oldest first. */
  pending: PendingMessageView[];
}

export const initialViewState: ViewState = {
  connection: 'connecting',
  lastSeq: 0,
  items: [],
  runs: {},
  busy: false,
  stopping: false,
  files: [],
  uploading: [],
  attached: [],
  pending: [],
};
