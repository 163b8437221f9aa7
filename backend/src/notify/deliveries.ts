import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.ts';
import type { Delivery, DeliveryOutbox, DeliveryOutcome } from '../store/delivery-outbox.ts';

/** How long one instance holds a delivery it attempts (longer than an attempt can take: ATTEMPT_TIMEOUT_MS). */
const HOLD_MS = 60_000;
/** How often the outbox is looked at for deliveries another instance let lapse. */
const POLL_MS = 30_000;
/** The longest wait between two attempts, and how long a delivery is tried at all. */
const MAX_BACKOFF_MS = 2 * 60 * 60_000;
const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;
/** How many deliveries one pass attempts at once. */
const BATCH = 10;

/** The wait before attempt `attempts + 1`: the base, times four for each failure before, at most two hours. */
export function backoffMs(baseMs: number, attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, baseMs * 4 ** Math.min(attempts, 12));
}

/** How one kind of target is sent to: undefined when it took the delivery, else what went wrong (`gone`: never again). */
export interface DeliverySender {
  /** Whether this sender sends to `target`. */
  sends(target: string): boolean;
  send(delivery: Delivery): Promise<{ error: string; gone?: boolean } | undefined>;
}

/**
 * Delivers notifications at least once, to webhooks and browsers' push services. Each delivery is
 * written to the store's outbox first (with the id its every attempt carries, a webhook's
 * `webhook-id`), then attempted by whichever instance claims it, one at a time; a failed attempt is
 * retried with backoff for up to a day, across restarts and instances.
 */
export class Deliveries {
  private readonly holder = `deliveries-${randomUUID()}`;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly outbox: DeliveryOutbox,
    private readonly senders: readonly DeliverySender[],
    private readonly options: {
      retryBaseMs: number;
      logger: Logger;
      /** No other instance shares the store: claims left in it were a dead process's, let go at the start. */
      exclusive: boolean;
    },
  ) {}

  /** Writes a delivery to the outbox (a second write of the same id is no new delivery) and sends it. */
  async send(id: string, target: string, payload: string): Promise<void> {
    await this.outbox.add({ id, target, payload });
    this.wake();
  }

  /** Starts delivering what the outbox holds (left by an earlier start or another instance). */
  start(): void {
    if (!this.options.exclusive) return this.wake();
    this.outbox
      .releaseHolds()
      .catch((error) => this.options.logger.warn({ err: error }, 'notification deliveries: claims left by an earlier start could not be let go'))
      .finally(() => this.wake());
  }

  /** Stops taking deliveries; waits for the attempts under way (what is left stays in the outbox). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.pass = this.drain()
      .catch((error) => this.options.logger.warn({ err: error }, 'notification deliveries: the outbox could not be read'))
      .finally(() => {
        this.pass = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        } else void this.scheduleNext();
      });
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const now = Date.now();
      const due = await this.outbox.claimDue(this.holder, new Date(now).toISOString(), new Date(now + HOLD_MS).toISOString(), BATCH);
      if (due.length === 0) return;
      await Promise.all(due.map(async (delivery) => this.outbox.settle(delivery.id, this.holder, await this.attempt(delivery))));
    }
  }

  private async scheduleNext(): Promise<void> {
    if (this.stopped) return;
    // Unread (the database did not answer): looked at again after the poll's wait.
    const read = await this.outbox.nextDue().then(
      (due) => ({ due }),
      () => undefined,
    );
    if (this.stopped || this.pass) return;
    // Nothing waits, and no other instance shares the outbox: the next delivery written here wakes it.
    if (read && !read.due && this.options.exclusive) return;
    const wait = read?.due ? Math.max(0, Math.min(POLL_MS, Date.parse(read.due) - Date.now())) : POLL_MS;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), wait);
    this.timer.unref();
  }

  private async attempt(delivery: Delivery): Promise<DeliveryOutcome> {
    const sender = this.senders.find((candidate) => candidate.sends(delivery.target));
    const failure = sender ? await sender.send(delivery) : { error: 'no way to send to this target is configured', gone: true };
    if (failure === undefined) return { kind: 'delivered' };
    const { error } = failure;
    const log = { delivery_id: delivery.id, attempt: delivery.attempts + 1, error };
    if (failure.gone || Date.now() - Date.parse(delivery.createdAt) >= GIVE_UP_AFTER_MS) {
      this.options.logger.warn(log, 'notification delivery given up');
      return { kind: 'given_up', error };
    }
    const at = new Date(Date.now() + backoffMs(this.options.retryBaseMs, delivery.attempts)).toISOString();
    this.options.logger.info({ ...log, retry_at: at }, 'notification delivery failed; it is tried again');
    return { kind: 'retry', at, error };
  }
}
