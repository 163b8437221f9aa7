import { Webhook } from 'standardwebhooks';
import type { Delivery } from '../store/delivery-outbox.ts';
import type { PushStore } from '../store/push-store.ts';
import type { DeliverySender } from './deliveries.ts';

/** How long an attempt waits for the receiver. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** Posts deliveries to a webhook, signed per the Standard Webhooks spec (the delivery's id is the `webhook-id`). */
export class WebhookSender implements DeliverySender {
  private readonly signer: Webhook;

  constructor(
    private readonly url: string,
    secret: string,
  ) {
    this.signer = new Webhook(secret);
  }

  sends(target: string): boolean {
    return target === this.url;
  }

  async send(delivery: Delivery): Promise<{ error: string; gone?: boolean } | undefined> {
    const sent = new Date();
    try {
      const response = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(Math.floor(sent.getTime() / 1000)),
          'webhook-signature': this.signer.sign(delivery.id, sent, delivery.payload),
        },
        body: delivery.payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => undefined);
      if (response.ok) return undefined;
      // 410 Gone: the receiver asks to be sent no more (Standard Webhooks).
      return { error: `${response.status} ${response.statusText}`.trim(), gone: response.status === 410 };
    } catch (error) {
      return { error: (error as Error).message };
    }
  }
}

/** A person's own webhook as a delivery's target: the person, whose URL and secret are read when it is sent. */
export const USER_WEBHOOK_TARGET = 'user-webhook:';

/**
 * Posts deliveries to a person's own webhook, signed like NOTIFY_WEBHOOK_URL's but with their own
 * secret; one whose person has removed their webhook meanwhile is dropped.
 */
export class UserWebhookSender implements DeliverySender {
  constructor(private readonly webhooks: Pick<PushStore, 'webhookOf'>) {}

  sends(target: string): boolean {
    return target.startsWith(USER_WEBHOOK_TARGET);
  }

  async send(delivery: Delivery): Promise<{ error: string; gone?: boolean } | undefined> {
    const webhook = await this.webhooks.webhookOf(delivery.target.slice(USER_WEBHOOK_TARGET.length));
    if (!webhook) return { error: 'the person removed their webhook', gone: true };
    return new WebhookSender(webhook.url, webhook.secret).send(delivery);
  }
}
