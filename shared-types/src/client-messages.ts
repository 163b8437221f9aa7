import { z } from 'zod';

/** Longest chat message accepted, in characters (frames are capped separately, in bytes). */
export const MAX_CONTENT_CHARS = 100_000;

/** A user message: a plain chat answer, or an agent run when `agent_mode` is true. */
export const ChatMessage = z.object({
  type: z.literal('chat'),
  content: z.string().trim().min(1, 'must not be empty').max(MAX_CONTENT_CHARS),
  agent_mode: z.boolean().optional(),
  agent_max_steps: z.number().int().optional(),
  tools: z.array(z.string().min(1).max(200)).max(200).optional(),
  strategy: z.string().min(1).max(64).optional(),
  /** Options of the chosen strategy, validated by it. */
  strategy_options: z.record(z.string(), z.unknown()).optional(),
  /** This run's approval policy per tool (`auto`, `ask`, `deny`), within what the server allows (a server `deny` stays). */
  tool_approval: z.record(z.string().min(1).max(200), z.enum(['auto', 'ask', 'deny'])).optional(),
  /** The most this run may cost in USD: it ends with `budget` before a model call would pass it. */
  max_cost_usd: z.number().positive().max(1_000_000).optional(),
  /**
   * Session files attached to this message (uploaded first): its images (PNG, JPEG, WebP, GIF) are
   * shown to the model with it, at most IMAGE_MAX_PER_MESSAGE; other files are read with read_file.
   */
  attachments: z.array(z.string().min(1).max(255)).max(50).optional(),
  /**
   * What a message sent while the session's run is active does (ignored while nothing runs):
   * `steer` (the default) reaches the run at its next safe boundary as a message the model reads;
   * `queue` starts the next run when this one ends; `interrupt` cuts the model call in flight and
   * the run goes on at once with the message. Acknowledged with `message_queued`.
   */
  delivery: z.enum(['steer', 'queue', 'interrupt']).optional(),
  /** With `steer` or `interrupt`: the branch the message is for (a research task "1.2", a plan step); without, the run as a whole. */
  node_id: z.string().min(1).max(200).optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

/** How a message sent during a run is delivered (see ChatMessage.delivery). */
export const Delivery = z.enum(['steer', 'queue', 'interrupt']);
export type Delivery = z.infer<typeof Delivery>;

/** Longest message a person may send to a running run, in characters, unless STEER_MAX_CHARS says otherwise. */
export const STEER_MAX_CHARS_DEFAULT = 16_000;

/** Withdraws a message sent during a run that the run has not taken yet (`message_cancelled`). */
export const CancelMessageMessage = z.object({
  type: z.literal('cancel_message'),
  message_id: z.string().min(1).max(200),
});
export type CancelMessageMessage = z.infer<typeof CancelMessageMessage>;

/**
 * Stop this session's active run, or continue one that ended (stopped, failed, input timed out,
 * at its step limit): `run_id` (default: the session's last run) and `extra_steps` (default: the
 * server's default budget) say which and how far.
 */
export const AgentControlMessage = z.object({
  type: z.literal('agent_control'),
  action: z.enum(['stop', 'resume']),
  run_id: z.string().min(1).max(200).optional(),
  extra_steps: z.number().int().min(1).optional(),
  /** A continued run's cost budget in USD (a run that ended with `budget` goes on with this one). */
  max_cost_usd: z.number().positive().max(1_000_000).optional(),
  /**
   * One branch only (a research task, the running plan step): `stop` cuts its model and tool calls
   * and the rest of the run goes on; `resume` runs a stopped branch again, its completed calls kept.
   */
  node_id: z.string().min(1).max(200).optional(),
});
export type AgentControlMessage = z.infer<typeof AgentControlMessage>;

/** A person's decision on a tool call that waits for approval: approve (with edited arguments) or deny (with a reason); `remember: "run"` approves later calls of the tool in this run. */
export const ApprovalDecision = z.strictObject({
  decision: z.enum(['approve', 'deny']),
  arguments: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().trim().max(2_000).optional(),
  remember: z.literal('run').optional(),
});
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;

/** An answer to a question a run asked, as it travels to the run: words (a question, a confirmation), or an approval's decision. */
export type PersonAnswer = { kind: 'text'; text: string } | { kind: 'approval'; approval: ApprovalDecision };

/** The answer a message carries, typed: its approval, or its words. */
export function answerOf(message: AgentUserInputMessage): PersonAnswer {
  return message.approval ? { kind: 'approval', approval: message.approval } : { kind: 'text', text: message.content ?? '' };
}

/** The answer to a pending `agent_request_input`. */
export const AgentUserInputMessage = z
  .object({
    type: z.literal('agent_user_input'),
    content: z.string().max(MAX_CONTENT_CHARS).optional(),
    /** Which question this answers; may be left out while exactly one is pending. */
    question_id: z.string().min(1).max(200).optional(),
    /** The answer to an approval (`kind: "approval"`): approve (with edited arguments) or deny (with a reason); `remember: "run"` approves later calls of the tool in this run. */
    approval: ApprovalDecision.optional(),
  })
  .refine((message) => message.content !== undefined || message.approval !== undefined, {
    message: 'needs "content" (or "approval" for an approval)',
    path: ['content'],
  });
export type AgentUserInputMessage = z.infer<typeof AgentUserInputMessage>;

/** Keep an immutable copy of the session's working state (the model's history). */
export const SnapshotSaveMessage = z.object({
  type: z.literal('snapshot_save'),
  label: z.string().trim().max(200).optional(),
});
export type SnapshotSaveMessage = z.infer<typeof SnapshotSaveMessage>;

/** Make a snapshot (or a run's step, `step:RUN:N`) the working state again; no run starts. */
export const SnapshotRollbackMessage = z.object({
  type: z.literal('snapshot_rollback'),
  snapshot_id: z.string().min(1).max(300),
});
export type SnapshotRollbackMessage = z.infer<typeof SnapshotRollbackMessage>;

/** Roll back to a snapshot (or a run's step) and resume its run at once. */
export const SnapshotResumeMessage = z.object({
  type: z.literal('snapshot_resume'),
  snapshot_id: z.string().min(1).max(300),
  extra_steps: z.number().int().min(1).optional(),
});
export type SnapshotResumeMessage = z.infer<typeof SnapshotResumeMessage>;

/** Replace the session's todo list (autonomous runs keep it), between runs: refused while one runs. */
export const TodosSetMessage = z.object({
  type: z.literal('todos_set'),
  todos: z
    .array(
      z.object({
        id: z.string().min(1).max(100).optional(),
        title: z.string().trim().min(1).max(500),
        status: z.enum(['pending', 'in_progress', 'completed']).default('pending'),
      }),
    )
    .max(100),
});
export type TodosSetMessage = z.infer<typeof TodosSetMessage>;

/** Everything a client may send. */
export const ClientMessage = z.discriminatedUnion('type', [
  ChatMessage,
  AgentControlMessage,
  AgentUserInputMessage,
  SnapshotSaveMessage,
  SnapshotRollbackMessage,
  SnapshotResumeMessage,
  TodosSetMessage,
  CancelMessageMessage,
]);
export type ClientMessage = z.infer<typeof ClientMessage>;

/** The `type` values a client may send, for error messages. */
export const CLIENT_MESSAGE_TYPES = [
  'chat',
  'agent_control',
  'agent_user_input',
  'snapshot_save',
  'snapshot_rollback',
  'snapshot_resume',
  'todos_set',
  'cancel_message',
] as const;
