import { z } from 'zod';

/** Fields every logged event carries: its place in the session's log and when it happened. */
const logged = {
  seq: z.number().int().positive(),
  ts: z.string(),
  run_id: z.string().optional(),
  /** The branch of the run the event belongs to (a plan step "3", a research task "1.2"), in strategies that branch. */
  node_id: z.string().optional(),
};

const agentUpdate = <T extends string, S extends z.ZodRawShape>(updateType: T, shape: S) =>
  z.object({ type: z.literal('agent_update'), update_type: z.literal(updateType), ...logged, ...shape });

/** Why a run was stopped. */
export const StopReason = z.enum(['user', 'input_timeout', 'shutdown', 'server_restart', 'timeout', 'token_budget', 'paused']);
export type StopReason = z.infer<typeof StopReason>;

/** How a completed run ended: with an answer, at its step limit, or a strategy's own ending. */
export const CompletionReason = z.enum([
  'answered',
  'max_steps',
  'workflow_complete',
  'natural_stop',
  'max_loops',
  'verifier_blocked',
  'wave_complete',
  'max_cycles',
  'budget',
  'unresolved',
]);
export type CompletionReason = z.infer<typeof CompletionReason>;

/** Who did something to a run (multi-user modes: AUTH_MODE oidc or header). */
export const By = z.object({ id: z.string(), name: z.string() });
export type By = z.infer<typeof By>;

export const AgentStart = agentUpdate('agent_start', {
  max_steps: z.number().int(),
  strategy: z.string().optional(),
  /** The strategy's options after defaults. */
  options: z.record(z.string(), z.unknown()).optional(),
  /** The tools enabled for the run. */
  tools: z.array(z.string()).optional(),
  /** The run this one continues (agent_control resume). */
  resumed_from: z.string().optional(),
  /** The run's OpenTelemetry trace id (32 hex digits), when the server traces runs. */
  trace_id: z.string().optional(),
  /** The queued message (`delivery: "queue"`) this run was started for, with its words. */
  message_id: z.string().optional(),
  question: z.string().optional(),
});
export type AgentStart = z.infer<typeof AgentStart>;
export const AgentTurnStart = agentUpdate('agent_turn_start', { step: z.number().int() });
export type AgentTurnStart = z.infer<typeof AgentTurnStart>;
export const AgentReason = agentUpdate('agent_reason', { content: z.string(), step: z.number().int() });
export type AgentReason = z.infer<typeof AgentReason>;
export const AgentRequestInput = agentUpdate('agent_request_input', {
  question: z.string(),
  step: z.number().int(),
  /** Names the question; an answer carries it (required while several questions wait). Always sent; absent only in logs written before it existed. */
  question_id: z.string().optional(),
  /** Answers to offer as buttons, e.g. ["Yes","No"]. */
  choices: z.array(z.string()).optional(),
  kind: z.enum(['question', 'confirm', 'approval']).optional(),
  tool_call_id: z.string().optional(),
  /** An approval's tool and the arguments it would run with. */
  tool: z.string().optional(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  /** When the question stops waiting (ISO-8601). */
  deadline: z.string().optional(),
});
export type AgentRequestInput = z.infer<typeof AgentRequestInput>;
export const AgentRequestInputTimeout = agentUpdate('agent_request_input_timeout', {
  step: z.number().int(),
});
export type AgentRequestInputTimeout = z.infer<typeof AgentRequestInputTimeout>;
/**
 * Nobody answered a question (or an approval) in time, and the run is parked rather than decided
 * for (INPUT_TIMEOUT_ACTION / APPROVAL_TIMEOUT_ACTION `park`): it holds nothing while it waits, its
 * questions stay open under the same ids, and an answer given later, anywhere, resumes it where it
 * stood. Its first event after this one (or its ending, when it is stopped) says it left the wait.
 */
export const AgentParked = agentUpdate('agent_parked', {
  step: z.number().int(),
  /** The question whose deadline passed. */
  question_id: z.string(),
});
export type AgentParked = z.infer<typeof AgentParked>;
/** A question (or an approval) was answered, and by whom (multi-user modes only). */
export const AgentInputReceived = agentUpdate('agent_input_received', { question_id: z.string(), by: By });
export type AgentInputReceived = z.infer<typeof AgentInputReceived>;
export const AgentObserve = agentUpdate('agent_observe', { content: z.string(), step: z.number().int() });
export type AgentObserve = z.infer<typeof AgentObserve>;
/** Tokens spent, as the model endpoint reported them: by one call, or a run's totals. */
export const TokenUsage = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  /** Of the prompt tokens, those served from the endpoint's cache. */
  cached_tokens: z.number().int().nonnegative(),
  /** Of the completion tokens, those spent reasoning. */
  reasoning_tokens: z.number().int().nonnegative(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** What a run's endings add: its token totals and cost in USD (null when a call's model has no known price). */
const runTotals = {
  usage: TokenUsage.optional(),
  cost_usd: z.number().nonnegative().nullable().optional(),
};

/** What became of one tool call of the step a stop interrupted. */
export const StoppedCall = z.object({
  tool_call_id: z.string(),
  tool: z.string(),
  /** completed: it finished; cancelled: its signal fired and it wound down; not_started; unknown: it did not settle within TOOL_STOP_GRACE_MS. */
  status: z.enum(['completed', 'cancelled', 'not_started', 'unknown']),
});
export type StoppedCall = z.infer<typeof StoppedCall>;

export const AgentStopped = agentUpdate('agent_stopped', {
  reason: StopReason.optional(),
  /** Who pressed stop (multi-user modes). */
  by: By.optional(),
  step: z.number().int().optional(),
  /** The stop receipt: each call of the step in progress, and what became of it. */
  calls: z.array(StoppedCall).optional(),
  ...runTotals,
});
export type AgentStopped = z.infer<typeof AgentStopped>;
export const AgentError = agentUpdate('agent_error', { message: z.string(), step: z.number().int(), ...runTotals });
export type AgentError = z.infer<typeof AgentError>;
export const AgentCompletion = agentUpdate('agent_completion', {
  steps: z.number().int(),
  reason: CompletionReason.optional(),
  /** With `unresolved`: what could not be done, in one sentence. */
  summary: z.string().optional(),
  ...runTotals,
});
export type AgentCompletion = z.infer<typeof AgentCompletion>;
/**
 * After each model call of a run: what the call spent (its model, tokens, cost in USD; null when
 * the model's price is unknown) and the run's cost so far (null once any call's cost is unknown).
 */
export const AgentUsage = agentUpdate('agent_usage', {
  purpose: z.string(),
  model: z.string(),
  ...TokenUsage.shape,
  cost_usd: z.number().nonnegative().nullable(),
  run_cost_usd: z.number().nonnegative().nullable(),
  /** The run's token totals so far. */
  usage: TokenUsage.optional(),
});
export type AgentUsage = z.infer<typeof AgentUsage>;

/**
 * A model call went to a fallback model of its route (the config file's `models` list): `model`
 * answered, after `from_model` (the route's first) and any others in `failures` had failed (5xx,
 * 429 after retries, a timeout, a refused connection). `step` is the run's step at the time.
 */
export const AgentModelFallback = agentUpdate('agent_model_fallback', {
  purpose: z.string(),
  model: z.string(),
  from_model: z.string(),
  failures: z.array(z.object({ model: z.string(), reason: z.string() })),
  step: z.number().int(),
});
export type AgentModelFallback = z.infer<typeof AgentModelFallback>;

/** A step's status in a plan (plan_execute). */
export const PlanStepStatus = z.enum(['pending', 'running', 'done', 'failed']);
export type PlanStepStatus = z.infer<typeof PlanStepStatus>;
/** One step of a plan as the wire shows it. */
export const PlanStep = z.object({
  index: z.number().int(),
  goal: z.string(),
  tools: z.array(z.string()),
  success_criteria: z.string(),
  context: z.string(),
  status: PlanStepStatus,
});
export type PlanStep = z.infer<typeof PlanStep>;
/** Why a plan was revised; `message`: a message the person sent made it unfit (the viability check said so after reading it). */
export const PlanTrigger = z.enum(['failed_attempts', 'missing_prerequisite', 'not_viable', 'message']);
export type PlanTrigger = z.infer<typeof PlanTrigger>;
/** The plan of a plan_execute run: revision 1 is the first; later ones say what triggered them. */
export const AgentPlan = agentUpdate('agent_plan', {
  revision: z.number().int().positive(),
  trigger: PlanTrigger.optional(),
  /** The ids of the person's messages (message_queued) the revision follows. */
  message_ids: z.array(z.string()).optional(),
  steps: z.array(PlanStep),
});
export type AgentPlan = z.infer<typeof AgentPlan>;
/** A plan step started, finished or failed. */
export const AgentPlanStep = agentUpdate('agent_plan_step', {
  index: z.number().int(),
  status: z.enum(['running', 'done', 'failed']),
  attempts: z.number().int(),
  observation: z.string().optional(),
});
export type AgentPlanStep = z.infer<typeof AgentPlanStep>;
/** What a plan_execute run did, sent before its ending. */
export const AgentRunMetadata = agentUpdate('agent_run_metadata', {
  planning: z.object({ revisions: z.number().int(), steps: z.number().int() }),
  execution: z.array(
    z.object({
      index: z.number().int(),
      goal: z.string(),
      success: z.boolean(),
      attempts: z.number().int(),
      tools_used: z.array(z.string()),
      observation: z.string(),
    }),
  ),
  summary: z.object({
    steps_total: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    success_rate: z.number(),
    tool_attempts: z.number().int(),
  }),
});
export type AgentRunMetadata = z.infer<typeof AgentRunMetadata>;

// --- autonomous ---------------------------------------------------------------------------
/** A todo's status (autonomous). */
export const TodoStatus = z.enum(['pending', 'in_progress', 'completed']);
export type TodoStatus = z.infer<typeof TodoStatus>;
/** One todo of a session's list. */
export const Todo = z.object({ id: z.string(), title: z.string(), status: TodoStatus });
export type Todo = z.infer<typeof Todo>;
/** Which of the four continuation guidance texts was given (incomplete todos? × tools used last?). */
export const GuidanceVariant = z.enum(['todos_tools', 'todos_no_tools', 'tools', 'no_tools']);
export type GuidanceVariant = z.infer<typeof GuidanceVariant>;
/** What was injected before an iteration's model call: the guidance (level 0) or a graduated reminder (1–3). */
export const AgentGuidance = agentUpdate('agent_guidance', {
  step: z.number().int(),
  variant: GuidanceVariant,
  level: z.number().int().min(0).max(3),
  content: z.string(),
});
export type AgentGuidance = z.infer<typeof AgentGuidance>;
/** An iteration's text, markers removed. */
export const AgentMessage = agentUpdate('agent_message', { step: z.number().int(), content: z.string() });
export type AgentMessage = z.infer<typeof AgentMessage>;
/** The session's whole todo list after a change (by a run, or by the user between runs: no run_id). */
export const AgentTodos = agentUpdate('agent_todos', { todos: z.array(Todo) });
export type AgentTodos = z.infer<typeof AgentTodos>;

// --- solver ---------------------------------------------------------------------------------
/** A stage of the solver's workflow. */
export const SolverStage = z.enum(['approach_proposer', 'approach_evaluator', 'problem_solver', 'expert_evaluator', 'orchestrator']);
export type SolverStage = z.infer<typeof SolverStage>;
export const AgentStageStart = agentUpdate('agent_stage_start', { stage: SolverStage, loop: z.number().int() });
export type AgentStageStart = z.infer<typeof AgentStageStart>;
/** A stage's output (the orchestrator's is its JSON). */
export const AgentStageComplete = agentUpdate('agent_stage_complete', { stage: SolverStage, loop: z.number().int(), content: z.string() });
export type AgentStageComplete = z.infer<typeof AgentStageComplete>;
export const DecisionAction = z.enum(['CONTINUE', 'FINAL', 'ASK_USER']);
export type DecisionAction = z.infer<typeof DecisionAction>;
/** The orchestrator's decision after a solver/evaluator loop. */
export const AgentDecision = agentUpdate('agent_decision', {
  loop: z.number().int(),
  action: DecisionAction,
  rationale: z.string(),
  final_answer: z.string(),
  question_for_user: z.string(),
  next_focus: z.string(),
});
export type AgentDecision = z.infer<typeof AgentDecision>;

// --- research -------------------------------------------------------------------------------
export const ResearchTaskStatus = z.enum(['todo', 'running', 'done', 'blocked', 'skipped', 'superseded', 'stopped']);
export const ResearchStageStatus = z.enum(['todo', 'running', 'passed', 'blocked']);
export const ResearchVerdict = z.enum(['PASS', 'CONDITIONAL', 'FAIL']);
/** The task graph after every change. */
export const AgentTaskGraph = agentUpdate('agent_task_graph', {
  doc: z.string(),
  version: z.number().int(),
  stages: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      status: ResearchStageStatus,
      verdict: ResearchVerdict.optional(),
      tasks: z.array(z.object({ id: z.string(), title: z.string(), agent: z.string(), status: ResearchTaskStatus, depends_on: z.array(z.string()) })),
    }),
  ),
});
export type AgentTaskGraph = z.infer<typeof AgentTaskGraph>;
export const AgentTaskStart = agentUpdate('agent_task_start', { task_id: z.string(), agent: z.string() });
export type AgentTaskStart = z.infer<typeof AgentTaskStart>;
export const AgentTaskComplete = agentUpdate('agent_task_complete', { task_id: z.string(), status: ResearchTaskStatus, summary: z.string() });
export type AgentTaskComplete = z.infer<typeof AgentTaskComplete>;
export const AgentVerdict = agentUpdate('agent_verdict', {
  scope: z.enum(['task', 'stage', 'final']),
  target: z.string(),
  verdict: ResearchVerdict,
  issues: z.array(z.string()),
  follow_up_task_ids: z.array(z.string()),
});
export type AgentVerdict = z.infer<typeof AgentVerdict>;

// --- steering -------------------------------------------------------------------------------
/**
 * A person's message sent during the run reached it: at step `step` (and branch `node_id`), before
 * the model call that reads it. `interrupted`: it cut a model call (delivery `interrupt`), whose
 * words so far are `partial`.
 */
export const AgentSteer = agentUpdate('agent_steer', {
  message_id: z.string(),
  step: z.number().int(),
  content: z.string(),
  delivery: z.enum(['steer', 'interrupt']),
  interrupted: z.boolean().optional(),
  partial: z.string().optional(),
});
export type AgentSteer = z.infer<typeof AgentSteer>;
/** One branch of the run (`node_id`: a research task, a plan step) was stopped; the rest goes on. Its own stop receipt. */
export const AgentNodeStopped = agentUpdate('agent_node_stopped', {
  step: z.number().int(),
  by: By.optional(),
  calls: z.array(StoppedCall),
});
export type AgentNodeStopped = z.infer<typeof AgentNodeStopped>;

/** Every logged `agent_update`. */
export const AgentUpdate = z.discriminatedUnion('update_type', [
  AgentStart,
  AgentTurnStart,
  AgentReason,
  AgentRequestInput,
  AgentRequestInputTimeout,
  AgentParked,
  AgentInputReceived,
  AgentObserve,
  AgentStopped,
  AgentError,
  AgentCompletion,
  AgentUsage,
  AgentModelFallback,
  AgentPlan,
  AgentPlanStep,
  AgentRunMetadata,
  AgentGuidance,
  AgentMessage,
  AgentTodos,
  AgentStageStart,
  AgentStageComplete,
  AgentDecision,
  AgentTaskGraph,
  AgentTaskStart,
  AgentTaskComplete,
  AgentVerdict,
  AgentSteer,
  AgentNodeStopped,
]);
export type AgentUpdate = z.infer<typeof AgentUpdate>;

const toolEvent = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({
    type: z.literal(type),
    ...logged,
    step: z.number().int(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    ...shape,
  });

export const ToolStart = toolEvent('tool_start', { arguments: z.record(z.string(), z.unknown()) });
export type ToolStart = z.infer<typeof ToolStart>;
export const ToolComplete = toolEvent('tool_complete', {
  result: z.unknown(),
  duration_ms: z.number().optional(),
  /** The arguments the call ran with, when a person edited them before approving. */
  arguments: z.record(z.string(), z.unknown()).optional(),
});
export type ToolComplete = z.infer<typeof ToolComplete>;
export const ToolError = toolEvent('tool_error', {
  error: z.string(),
  duration_ms: z.number().optional(),
});
export type ToolError = z.infer<typeof ToolError>;

export const AssistantMessage = z.object({ type: z.literal('assistant_message'), ...logged, content: z.string() });
export type AssistantMessage = z.infer<typeof AssistantMessage>;
export const ResponseComplete = z.object({ type: z.literal('response_complete'), ...logged });
/** A snapshot of the session's working state was kept. */
export const SnapshotSaved = z.object({
  type: z.literal('snapshot_saved'),
  ...logged,
  snapshot_id: z.string(),
  label: z.string(),
  at_seq: z.number().int(),
});
export type SnapshotSaved = z.infer<typeof SnapshotSaved>;

/**
 * The session's working state was rolled back to a snapshot (or a run's step): the model's history
 * after `to_seq` is dropped (the log keeps it); the state before is kept as `new_snapshot_id`.
 */
export const SessionRolledBack = z.object({
  type: z.literal('session_rolled_back'),
  ...logged,
  snapshot_id: z.string(),
  new_snapshot_id: z.string(),
  to_seq: z.number().int(),
});
export type SessionRolledBack = z.infer<typeof SessionRolledBack>;

/** A plain chat answer failed (code from ERROR_CODES); logged, so a reload still shows it. */
export const LoggedError = z.object({ type: z.literal('error'), ...logged, code: z.string(), message: z.string() });
export type LoggedError = z.infer<typeof LoggedError>;
export type ResponseComplete = z.infer<typeof ResponseComplete>;

/** A session file as listed. */
export const SessionFile = z.object({ name: z.string(), size: z.number().int(), modified: z.string() });
export type SessionFile = z.infer<typeof SessionFile>;

/** A file was saved into the session's folder: uploaded (`source` "user") or written by the agent or an MCP server. */
export const FileSaved = z.object({
  type: z.literal('file_saved'),
  ...logged,
  file: SessionFile,
  source: z.string(),
});
export type FileSaved = z.infer<typeof FileSaved>;
/** A file was deleted from the session's folder. */
export const FileDeleted = z.object({ type: z.literal('file_deleted'), ...logged, name: z.string() });
export type FileDeleted = z.infer<typeof FileDeleted>;

/** Every event that is part of a session's log (carries `seq`). */
export const LoggedEvent = z.union([
  AgentUpdate,
  ToolStart,
  ToolComplete,
  ToolError,
  AssistantMessage,
  ResponseComplete,
  FileSaved,
  FileDeleted,
  LoggedError,
  SnapshotSaved,
  SessionRolledBack,
]);
export type LoggedEvent = z.infer<typeof LoggedEvent>;

/** Streaming previews; the full event always follows. Not logged. */
export const AgentTextDelta = z.object({
  type: z.literal('agent_update'),
  update_type: z.enum(['agent_reason_delta', 'agent_observe_delta']),
  delta: z.string(),
  step: z.number().int(),
  run_id: z.string().optional(),
  node_id: z.string().optional(),
});
export type AgentTextDelta = z.infer<typeof AgentTextDelta>;
export const AssistantDelta = z.object({
  type: z.literal('assistant_delta'),
  delta: z.string(),
  run_id: z.string().optional(),
});
export type AssistantDelta = z.infer<typeof AssistantDelta>;
export const DeltaEvent = z.union([AgentTextDelta, AssistantDelta]);

/** A running tool reported how far it has got (MCP progress). Not logged; the tool's own events follow. */
export const ToolProgressEvent = z.object({
  type: z.literal('tool_progress'),
  run_id: z.string().optional(),
  node_id: z.string().optional(),
  step: z.number().int(),
  tool_call_id: z.string(),
  tool_name: z.string(),
  progress: z.number(),
  total: z.number().optional(),
  message: z.string().optional(),
});
export type ToolProgressEvent = z.infer<typeof ToolProgressEvent>;
export type DeltaEvent = z.infer<typeof DeltaEvent>;

/**
 * A client message was rejected (the connection stays open; not logged), or a plain chat answer
 * failed (logged, with `seq` and `run_id`, so a reload shows it). `code` is one of ERROR_CODES.
 */
export const ErrorEvent = z.object({ type: z.literal('error'), code: z.string(), message: z.string() });
export type ErrorEvent = z.infer<typeof ErrorEvent>;

/** A tool a run may enable. */
export const ToolInfo = z.object({
  name: z.string(),
  description: z.string(),
  source: z.string(),
  /** Its approval policy on this server: auto (runs), ask (a person approves each call), deny (never runs). */
  approval: z.enum(['auto', 'ask', 'deny']).optional(),
  /** False while its MCP server is down (calls fail until it is back); absent means available. */
  available: z.boolean().optional(),
});
export type ToolInfo = z.infer<typeof ToolInfo>;

/** An MCP server from the config file and how it is doing. */
export const McpServerStatus = z.object({
  name: z.string(),
  transport: z.enum(['stdio', 'http']),
  status: z.enum(['connecting', 'connected', 'unavailable']),
  /** Why it is unavailable, in one line. */
  error: z.string().optional(),
  /** When the next attempt is made (ISO-8601), while unavailable. */
  retry_at: z.string().optional(),
  tools: z.number().int(),
});
export type McpServerStatus = z.infer<typeof McpServerStatus>;

/** Sent (outside the log) to every connected client when the tool list or a server's status changes. */
export const ToolsChangedEvent = z.object({
  type: z.literal('tools_changed'),
  tools: z.array(ToolInfo),
  mcp_servers: z.array(McpServerStatus),
});
export type ToolsChangedEvent = z.infer<typeof ToolsChangedEvent>;

/**
 * The session was deleted (from another tab or through the API) while this socket was attached.
 * Not logged (the log is gone with it); the server closes the socket right after (code 4404).
 */
export const SessionDeletedEvent = z.object({
  type: z.literal('session_deleted'),
  session_id: z.string(),
});
export type SessionDeletedEvent = z.infer<typeof SessionDeletedEvent>;

/** A strategy a run may use, as `session` lists it. */
export const StrategyInfo = z.object({
  name: z.string(),
  label: z.string(),
  description: z.string(),
  /** JSON Schema of `strategy_options`, defaults included. */
  options_schema: z.record(z.string(), z.unknown()),
});
export type StrategyInfo = z.infer<typeof StrategyInfo>;

/** How the model endpoint is doing: checked at startup, then after every call that failed or succeeded. */
export const ModelHealth = z.object({
  status: z.enum(['unknown', 'ok', 'failing']),
  /** What went wrong, in words ("connection refused at http://127.0.0.1:9/v1", "the key was refused (401)"). */
  message: z.string().optional(),
  /** What to do about it ("check OPENAI_BASE_URL", "check OPENAI_API_KEY"). */
  hint: z.string().optional(),
  /** When this was last learnt (ISO-8601). */
  checked_at: z.string().optional(),
});
export type ModelHealth = z.infer<typeof ModelHealth>;

/** Sent (outside the log) to every connected client when the model's health changes. */
export const ModelHealthEvent = z.object({ type: z.literal('model_health'), health: ModelHealth });
export type ModelHealthEvent = z.infer<typeof ModelHealthEvent>;

/** A setting in force, for the settings panel: the variable that sets it and its value. */
export const SettingInfo = z.object({
  /** The environment variable, e.g. "MAX_CONCURRENT_RUNS". */
  name: z.string(),
  value: z.string(),
  description: z.string(),
});
export type SettingInfo = z.infer<typeof SettingInfo>;

/** A message sent during a run, as it waits: stored, then acknowledged to the session's clients (not logged). */
export const PendingMessage = z.object({
  message_id: z.string(),
  delivery: z.enum(['steer', 'queue', 'interrupt']),
  /** Its place among the session's waiting messages, from 1. */
  position: z.number().int(),
  content: z.string(),
  node_id: z.string().optional(),
  run_id: z.string().optional(),
});
export type PendingMessage = z.infer<typeof PendingMessage>;
/** A message sent during a run was stored: it waits for its boundary (`steer`, `interrupt`) or for the run to end (`queue`). */
export const MessageQueued = PendingMessage.extend({ type: z.literal('message_queued') });
export type MessageQueued = z.infer<typeof MessageQueued>;
/** A waiting message was withdrawn (`cancel_message`): it never reaches the model. */
export const MessageCancelled = z.object({ type: z.literal('message_cancelled'), message_id: z.string() });
export type MessageCancelled = z.infer<typeof MessageCancelled>;

/** Sent right after the upgrade. */
export const SessionEvent = z.object({
  type: z.literal('session'),
  session_id: z.string(),
  protocol: z.literal(1),
  /** True when an admin joined another person's chat: they may watch it and stop its run, nothing more. */
  read_only: z.boolean().optional(),
  /** Whose chat it is, when it is not the client's own (an admin watching). */
  owner: z.object({ id: z.string(), name: z.string() }).optional(),
  model: z.string(),
  /** True when the model is the offline demo stand-in. */
  demo: z.boolean().optional(),
  resumed: z.boolean().optional(),
  last_seq: z.number().int().optional(),
  limits: z.object({ max_steps_default: z.number().int(), max_steps_limit: z.number().int() }),
  tools: z.array(ToolInfo),
  /** The config file's MCP servers and their state. */
  mcp_servers: z.array(McpServerStatus).optional(),
  strategies: z.array(z.string()).optional(),
  strategy_catalog: z.array(StrategyInfo).optional(),
  /** The model endpoint's base URL, without credentials (absent for the demo model). */
  model_endpoint: z.string().optional(),
  model_health: ModelHealth.optional(),
  /** The limits and settings in force, for the settings panel. */
  settings: z.array(SettingInfo).optional(),
  /** Where MCP servers are configured (the config file's path). */
  config_file: z.string().optional(),
  /** A rejoined chat's last agent run: its strategy and options, so a client's picker goes on with them. */
  last_run: z.object({ strategy: z.string(), options: z.record(z.string(), z.unknown()).optional() }).optional(),
  /** A link to a run's trace with `{trace_id}` in it (TRACE_URL_TEMPLATE), when runs are traced. */
  trace_url_template: z.string().optional(),
  /** Messages sent during a run that wait for it (steers, queued messages), oldest first. */
  pending_messages: z.array(PendingMessage).optional(),
});
export type SessionEvent = z.infer<typeof SessionEvent>;

/**
 * Sent (outside the log) to every connected client when an admin changed the settings in the app:
 * what the session message says of the model and the limits, as it is now. The change holds from
 * the next run on.
 */
export const SettingsChangedEvent = SessionEvent.pick({ model: true, demo: true, model_endpoint: true, limits: true, settings: true }).extend({
  type: z.literal('settings_changed'),
});
export type SettingsChangedEvent = z.infer<typeof SettingsChangedEvent>;

/** Everything a server may send. */
// A logged error (with seq) is tried before the plain one, which would drop its seq.
export const ServerEvent = z.union([
  SessionEvent,
  ToolsChangedEvent,
  SettingsChangedEvent,
  SessionDeletedEvent,
  ModelHealthEvent,
  MessageQueued,
  MessageCancelled,
  LoggedError,
  ErrorEvent,
  DeltaEvent,
  ToolProgressEvent,
  LoggedEvent,
]);
export type ServerEvent = z.infer<typeof ServerEvent>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A logged event before the session log stamps it with `seq` and `ts`. */
export type LoggedEventBody = DistributiveOmit<LoggedEvent, 'seq' | 'ts'>;
