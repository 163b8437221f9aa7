import type { Message } from '@ag-ui/core';
import { ChatMessage, type ClientMessage, ERROR_CODES, type ErrorCode } from '@stepwise/shared-types';
import { z } from 'zod';
import type { ChatService } from '../../chat/chat-service.ts';
import type { Store } from '../../store/store.ts';

/** What `forwardedProps` may carry: the run's settings, as a `chat` message names them. */
export const ForwardedProps = z
  .object({
    strategy: z.string().min(1).max(64).optional(),
    strategy_options: z.record(z.string(), z.unknown()).optional(),
    max_steps: z.number().int().min(1).optional(),
    tools: z.array(z.string().min(1).max(200)).max(200).optional(),
    /** While the thread's run goes: `steer` (read at its next boundary), `queue` (runs after it) or `interrupt`; without, such a POST is 409. */
    delivery: z.enum(['steer', 'queue', 'interrupt']).optional(),
    /** With `steer` or `interrupt`: the branch it is for (a research task). */
    node_id: z.string().min(1).max(200).optional(),
  })
  .loose();

/** The user message as a `chat` message with the run's settings, as the socket's client sends it. */
export function chatMessage(content: string, props: z.infer<typeof ForwardedProps>) {
  return ChatMessage.safeParse({
    type: 'chat',
    content,
    agent_mode: true,
    ...(props.strategy ? { strategy: props.strategy } : {}),
    ...(props.strategy_options ? { strategy_options: props.strategy_options } : {}),
    ...(props.max_steps ? { agent_max_steps: props.max_steps } : {}),
    ...(props.tools ? { tools: props.tools } : {}),
    ...(props.delivery ? { delivery: props.delivery } : {}),
    ...(props.node_id ? { node_id: props.node_id } : {}),
  });
}

/** AG-UI's protobuf encoding only when asked for by name; server-sent events otherwise (no Accept, or any). */
export function wantsProtobuf(accept: string | undefined): accept is string {
  return accept?.includes('application/vnd.ag-ui.event+proto') ?? false;
}

/** The HTTP status of a refused message. */
export function statusOf(code: ErrorCode): number {
  const declared = (ERROR_CODES[code] as { status?: number } | undefined)?.status;
  if (declared) return declared;
  switch (code) {
    case 'no_pending_input':
      return 409;
    case 'server_busy':
    case 'engine_unavailable':
      return 503;
    case 'too_many_runs':
    case 'rate_limited':
      return 429;
    case 'session_deleted':
      return 410;
    default:
      return 400;
  }
}

/** Answers to interrupts as the socket's messages: resolved ones answer their question; a cancelled one stops the run. */
export function resumeMessages(resume: { interruptId: string; status: 'resolved' | 'cancelled'; payload?: unknown }[]): ClientMessage[] {
  if (resume.some((entry) => entry.status === 'cancelled')) return [{ type: 'agent_control', action: 'stop' }];
  return resume.map((entry): ClientMessage => {
    const payload = entry.payload as { decision?: unknown } | undefined;
    // An approval's payload is its decision object; anything else is the answer's text.
    if (payload && typeof payload === 'object' && (payload.decision === 'approve' || payload.decision === 'deny')) {
      return {
        type: 'agent_user_input',
        question_id: entry.interruptId,
        approval: payload as NonNullable<Extract<ClientMessage, { type: 'agent_user_input' }>['approval']>,
      };
    }
    return { type: 'agent_user_input', question_id: entry.interruptId, content: answerText(entry.payload) };
  });
}

/** An interrupt's payload as the answer's text: a string, `{answer}` or `{content}`, else its JSON. */
function answerText(payload: unknown): string {
  if (typeof payload === 'string') return payload;
  if (payload && typeof payload === 'object') {
    const { answer, content } = payload as { answer?: unknown; content?: unknown };
    if (typeof answer === 'string') return answer;
    if (typeof content === 'string') return content;
  }
  return payload === undefined ? '' : JSON.stringify(payload);
}

export function lastUserText(messages: Message[]): string | undefined {
  const last = messages.findLast((message) => message.role === 'user');
  if (!last) return undefined;
  const content = last.content as unknown;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { type?: string; text?: string }) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
      .join('')
      .trim();
  }
  return undefined;
}

/** A resume must name questions the thread's run is waiting on; the run's events from its start rebuild the state. */
export async function checkResumable(
  chat: ChatService,
  store: Store,
  resume: { interruptId: string }[],
): Promise<{ runId: string; afterSeq: number } | { error: ErrorCode; status: number; message: string }> {
  const runId = chat.activeRunId ?? (await store.listRuns(chat.sessionId)).findLast((run) => run.status === 'running')?.id;
  if (!runId) return { error: 'no_pending_input', status: 409, message: 'Nothing in this thread waits for an answer' };
  const waiting = chat.pendingQuestionIds;
  // With several instances the run may wait elsewhere: the answer itself then says whether it was taken.
  if (chat.activeRunId) {
    const unknown = resume.find((entry) => !waiting.includes(entry.interruptId));
    if (unknown) return { error: 'no_pending_input', status: 409, message: `No question with id "${unknown.interruptId.slice(0, 100)}" is waiting` };
  }
  const run = await store.getRun(runId);
  return { runId, afterSeq: run?.afterSeq ?? chat.log.lastSeq };
}
