import type { LoggedEvent } from '@stepwise/shared-types';

/** What a person is told about, wherever they are. */
export type NotificationType = 'input_required' | 'approval_required' | 'run_finished' | 'run_failed';

/** A notification's body, as a webhook receives it (the Standard Webhooks shape: type, timestamp, data). */
export interface Notification {
  type: NotificationType;
  timestamp: string;
  data: {
    chat: { id: string; title: string | null };
    run_id: string | null;
    /** Opens the question's answer page in the web app, or the chat for a run's end. */
    link: string;
    question?: { id: string; text: string; kind: string; choices?: string[]; deadline?: string };
    /** An approval's call: the tool and the arguments it would run with. */
    call?: { tool_call_id?: string; tool: string; arguments: Record<string, unknown> };
    /** How a run ended (`agent_completion`'s reason), or what failed. */
    reason?: string;
    message?: string;
  };
}

/** The chat an event belongs to, as a notification names it. */
export interface ChatRef {
  id: string;
  title: string | null;
}

/**
 * The notification an event calls for, if any: a question or an approval that waits for a person,
 * a run that finished or failed. Everything else (and an answer to a question) calls for none.
 */
export function notificationFor(event: LoggedEvent, chat: ChatRef, publicUrl: string): Notification | undefined {
  if (event.type !== 'agent_update') return undefined;
  const base = { timestamp: event.ts, chat, run_id: event.run_id ?? null };
  // A question's link opens the answer page; a run's end opens the chat.
  const link = (questionId?: string) => {
    const url = new URL(questionId ? `${publicUrl}/answer/${encodeURIComponent(questionId)}` : `${publicUrl}/`);
    url.searchParams.set('session', chat.id);
    return url.toString();
  };
  switch (event.update_type) {
    case 'agent_request_input': {
      const id = event.question_id;
      if (!id) return undefined;
      const question = {
        id,
        text: event.question,
        kind: event.kind ?? 'question',
        ...(event.choices ? { choices: event.choices } : {}),
        ...(event.deadline ? { deadline: event.deadline } : {}),
      };
      const approval = event.kind === 'approval' && event.tool;
      return {
        type: approval ? 'approval_required' : 'input_required',
        timestamp: base.timestamp,
        data: {
          chat,
          run_id: base.run_id,
          link: link(id),
          question,
          ...(approval
            ? { call: { ...(event.tool_call_id ? { tool_call_id: event.tool_call_id } : {}), tool: event.tool!, arguments: event.arguments ?? {} } }
            : {}),
        },
      };
    }
    case 'agent_completion':
      return { type: 'run_finished', timestamp: base.timestamp, data: { chat, run_id: base.run_id, link: link(), reason: event.reason } };
    case 'agent_error':
      return { type: 'run_failed', timestamp: base.timestamp, data: { chat, run_id: base.run_id, link: link(), message: event.message } };
    default:
      return undefined;
  }
}
