import webpush from 'web-push';
import type { Delivery } from '../store/delivery-outbox.ts';
import type { PushStore } from '../store/push-store.ts';
import type { DeliverySender } from './deliveries.ts';
import type { Notification } from './notifications.ts';
import { ATTEMPT_TIMEOUT_MS } from './webhook-sender.ts';

/** A push delivery's target: the subscription's endpoint after this prefix. */
export const PUSH_TARGET = 'push:';

/** What a push delivery's payload holds: the subscription's keys and the message its service worker shows. */
export interface PushPayload {
  keys: { p256dh: string; auth: string };
  message: PushMessage;
}

/** What the service worker shows: a title, a line, where a click goes, and a tag that replaces an earlier one. */
export interface PushMessage {
  title: string;
  body: string;
  url: string;
  tag: string;
  type: Notification['type'];
}

/** Push services take about 4 KB; a long question is cut to keep well inside it. */
const BODY_MAX_CHARS = 600;

/** The message a notification shows on a device. */
export function pushMessage(notification: Notification): PushMessage {
  const { data } = notification;
  const chat = data.chat.title ? ` · ${data.chat.title}` : '';
  const lines: Record<Notification['type'], [string, string]> = {
    input_required: [`The agent asks you${chat}`, data.question?.text ?? ''],
    approval_required: [`Approval needed${chat}`, data.call ? `The agent wants to run ${data.call.tool}.` : ''],
    run_finished: [`The run finished${chat}`, data.reason === 'answered' ? 'It has an answer.' : `It ended: ${data.reason ?? 'done'}.`],
    run_failed: [`The run failed${chat}`, data.message ?? ''],
  };
  const [title, body] = lines[notification.type];
  return {
    title,
    body: body.length > BODY_MAX_CHARS ? `${body.slice(0, BODY_MAX_CHARS - 1)}…` : body,
    url: data.link,
    tag: data.question?.id ?? `${notification.type}:${data.run_id ?? data.chat.id}`,
    type: notification.type,
  };
}

/**
 * Sends deliveries to browsers' push services (Web Push): encrypted for the subscription and signed
 * with the server's VAPID keys by the `web-push` library. A subscription the service says is gone
 * (404, 410) is forgotten.
 */
export class PushSender implements DeliverySender {
  constructor(
    private readonly vapid: { subject: string; publicKey: string; privateKey: string },
    private readonly subscriptions: PushStore,
  ) {}

  sends(target: string): boolean {
    return target.startsWith(PUSH_TARGET);
  }

  async send(delivery: Delivery): Promise<{ error: string; gone?: boolean } | undefined> {
    const endpoint = delivery.target.slice(PUSH_TARGET.length);
    const { keys, message } = JSON.parse(delivery.payload) as PushPayload;
    try {
      const request = webpush.generateRequestDetails({ endpoint, keys }, JSON.stringify(message), {
        vapidDetails: this.vapid,
        TTL: 24 * 60 * 60,
        urgency: message.type === 'run_finished' ? 'normal' : 'high',
      });
      const response = await fetch(request.endpoint, {
        method: request.method,
        headers: request.headers as Record<string, string>,
        body: request.body ? new Uint8Array(request.body) : null,
        redirect: 'manual',
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return undefined;
      const gone = response.status === 404 || response.status === 410;
      if (gone) await this.subscriptions.drop(endpoint);
      return { error: `${response.status} ${response.statusText}`.trim(), gone };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }
}
