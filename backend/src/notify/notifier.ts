import type { LoggedEvent } from '@stepwise/shared-types';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import type { Store } from '../store/store.ts';
import { notificationFor } from './notifications.ts';
import { WebhookDeliveries } from './webhook-deliveries.ts';

/**
 * Tells people what needs them and how runs ended: sees every event this instance logs, and for a
 * question, an approval, a finished or a failed run writes a notification to each configured
 * channel (a webhook). Nothing is configured: it sees and does nothing.
 */
export class Notifier {
  private readonly webhook: WebhookDeliveries | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: Pick<Config, 'notify' | 'publicUrl' | 'cluster'>,
    private readonly logger: Logger,
  ) {
    const { webhook, retryBaseMs } = config.notify;
    this.webhook = webhook ? new WebhookDeliveries(store.outbox, webhook, { retryBaseMs, logger, exclusive: !config.cluster }) : undefined;
  }

  /** Whether any channel is configured. */
  get enabled(): boolean {
    return this.webhook !== undefined;
  }

  start(): void {
    this.webhook?.start();
  }

  stop(): Promise<void> {
    return this.webhook?.stop() ?? Promise.resolve();
  }

  /** Sees a logged event (it is stored already); never throws and never holds up the log. */
  readonly observe = (event: LoggedEvent, sessionId: string): void => {
    if (!this.webhook || event.type !== 'agent_update') return;
    void this.notify(event, sessionId).catch((error) => this.logger.warn({ err: error, session_id: sessionId }, 'a notification could not be written'));
  };

  private async notify(event: LoggedEvent, sessionId: string): Promise<void> {
    if (!notificationFor(event, { id: sessionId, title: null }, this.config.publicUrl)) return;
    const session = await this.store.getSession(sessionId);
    const notification = notificationFor(event, { id: sessionId, title: session?.title ?? null }, this.config.publicUrl);
    // One id per event: the same notification written twice is one delivery.
    if (notification) await this.webhook?.send(`msg_${sessionId}_${event.seq}`, notification);
  }
}
