import { createHash } from 'node:crypto';
import type { LoggedEvent } from '@stepwise/shared-types';
import webpush from 'web-push';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/store.ts';
import { Deliveries, type DeliverySender } from './deliveries.ts';
import { type Notification, notificationFor } from './notifications.ts';
import { PUSH_TARGET, type PushPayload, PushSender, pushMessage } from './push-sender.ts';
import { USER_WEBHOOK_TARGET, UserWebhookSender, WebhookSender } from './webhook-sender.ts';

/** The server's VAPID key pair, as the store keeps it when it made one. */
const VAPID_KEY = 'vapid';

/**
 * Tells people what needs them and how runs ended: sees every event this instance logs, and for a
 * question, an approval, a finished or a failed run writes a delivery to each channel (the
 * webhook, the chat owner's own webhook, and each browser they subscribed to push), sent from the
 * store's outbox.
 */
export class Notifier {
  private readonly deliveries: Deliveries;
  private readonly webhook: WebhookSender | undefined;
  private vapid: Promise<{ subject: string; publicKey: string; privateKey: string }> | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: Pick<Config, 'notify' | 'publicUrl' | 'cluster'>,
    private readonly logger: Logger,
  ) {
    const { webhook, retryBaseMs } = config.notify;
    this.webhook = webhook ? new WebhookSender(webhook.url, webhook.secret) : undefined;
    const push: DeliverySender = {
      sends: (target) => target.startsWith(PUSH_TARGET),
      send: async (delivery) => new PushSender(await this.vapidKeys(), store.push).send(delivery),
    };
    const senders = [...(this.webhook ? [this.webhook] : []), new UserWebhookSender(store.push), push];
    this.deliveries = new Deliveries(store.outbox, senders, { retryBaseMs, logger, exclusive: !config.cluster });
  }

  start(): void {
    this.deliveries.start();
  }

  stop(): Promise<void> {
    return this.deliveries.stop();
  }

  /** The public VAPID key browsers subscribe with (made and kept on first use, unless VAPID_* sets it). */
  async publicKey(): Promise<string> {
    return (await this.vapidKeys()).publicKey;
  }

  private vapidKeys(): Promise<{ subject: string; publicKey: string; privateKey: string }> {
    this.vapid ??= (async () => {
      const { vapid } = this.config.notify;
      const subject = vapid.subject ?? (this.config.publicUrl.startsWith('https:') ? this.config.publicUrl : 'mailto:stepwise@localhost');
      if (vapid.publicKey && vapid.privateKey) return { subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey };
      const kept = JSON.parse(await this.store.push.serverKey(VAPID_KEY, () => JSON.stringify(webpush.generateVAPIDKeys()))) as {
        publicKey: string;
        privateKey: string;
      };
      return { subject, ...kept };
    })();
    this.vapid.catch(() => {
      this.vapid = undefined;
    });
    return this.vapid;
  }

  /** Sees a logged event (it is stored already); never throws and never holds up the log. */
  readonly observe = (event: LoggedEvent, sessionId: string): void => {
    if (event.type !== 'agent_update' || !notificationFor(event, { id: sessionId, title: null }, this.config.publicUrl)) return;
    void this.notify(event, sessionId).catch((error) => this.logger.warn({ err: error, session_id: sessionId }, 'a notification could not be written'));
  };

  private async notify(event: LoggedEvent, sessionId: string): Promise<void> {
    const session = await this.store.getSession(sessionId);
    const notification = notificationFor(event, { id: sessionId, title: session?.title ?? null }, this.config.publicUrl);
    if (!notification || !session) return;
    // One id per event and target: the same notification written twice is one delivery.
    const id = `msg_${sessionId}_${event.seq}`;
    const writes: Promise<void>[] = [];
    if (this.webhook) writes.push(this.deliveries.send(id, this.config.notify.webhook!.url, JSON.stringify(notification)));
    // The chat owner's own webhook, signed with their own secret.
    if (await this.store.push.webhookOf(session.owner))
      writes.push(this.deliveries.send(`${id}_own`, `${USER_WEBHOOK_TARGET}${session.owner}`, JSON.stringify(notification)));
    for (const subscription of await this.store.push.forUser(session.owner)) {
      const payload: PushPayload = { keys: { p256dh: subscription.p256dh, auth: subscription.auth }, message: pushMessage(notification as Notification) };
      const device = createHash('sha256').update(subscription.endpoint).digest('hex').slice(0, 16);
      writes.push(this.deliveries.send(`${id}_${device}`, `${PUSH_TARGET}${subscription.endpoint}`, JSON.stringify(payload)));
    }
    await Promise.all(writes);
  }
}
