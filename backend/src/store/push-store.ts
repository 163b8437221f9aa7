import type { Kysely } from 'kysely';

/** A browser's push subscription (the Push API's endpoint and keys), kept for the person who made it. */
export interface PushSubscriptionRecord {
  endpoint: string;
  userId: string;
  p256dh: string;
  auth: string;
}

/** Push subscriptions per person, and the server's own keys (VAPID) that every instance signs with. */
export interface PushStore {
  /** Keeps a subscription (a second call with its endpoint replaces it). */
  subscribe(subscription: PushSubscriptionRecord): Promise<void>;
  /** Forgets a person's subscription; false when they had none with that endpoint. */
  unsubscribe(userId: string, endpoint: string): Promise<boolean>;
  forUser(userId: string): Promise<PushSubscriptionRecord[]>;
  /** Forgets a subscription the push service says is gone (404, 410). */
  drop(endpoint: string): Promise<void>;
  /** The value kept under `name`, made by `make` and kept the first time (the first instance's wins). */
  serverKey(name: string, make: () => string): Promise<string>;
  /** A person's own webhook (multi-user modes), or undefined. */
  webhookOf(userId: string): Promise<UserWebhook | undefined>;
  /** Keeps a person's webhook (replacing theirs), or with null forgets it. */
  setWebhook(userId: string, webhook: UserWebhook | null): Promise<void>;
}

/** Where a person's notifications go besides NOTIFY_WEBHOOK_URL, and the secret they are signed with (theirs alone). */
export interface UserWebhook {
  url: string;
  secret: string;
}

export type PushTables = {
  push_subscriptions: { endpoint: string; user_id: string; p256dh: string; auth: string; created_at: string | Date };
  server_keys: { name: string; value: string };
  user_webhooks: { user_id: string; url: string; secret: string; updated_at: string | Date };
};

/** Push subscriptions on the store's SQL database. */
export class SqlPushStore implements PushStore {
  constructor(private readonly db: Kysely<PushTables>) {}

  async subscribe(subscription: PushSubscriptionRecord): Promise<void> {
    const row = { endpoint: subscription.endpoint, user_id: subscription.userId, p256dh: subscription.p256dh, auth: subscription.auth };
    await this.db
      .insertInto('push_subscriptions')
      .values({ ...row, created_at: new Date().toISOString() })
      .onConflict((conflict) => conflict.column('endpoint').doUpdateSet(row))
      .execute();
  }

  async unsubscribe(userId: string, endpoint: string): Promise<boolean> {
    const result = await this.db.deleteFrom('push_subscriptions').where('endpoint', '=', endpoint).where('user_id', '=', userId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async forUser(userId: string): Promise<PushSubscriptionRecord[]> {
    const rows = await this.db.selectFrom('push_subscriptions').select(['endpoint', 'user_id', 'p256dh', 'auth']).where('user_id', '=', userId).execute();
    return rows.map((row) => ({ endpoint: row.endpoint, userId: row.user_id, p256dh: row.p256dh, auth: row.auth }));
  }

  async drop(endpoint: string): Promise<void> {
    await this.db.deleteFrom('push_subscriptions').where('endpoint', '=', endpoint).execute();
  }

  async serverKey(name: string, make: () => string): Promise<string> {
    await this.db
      .insertInto('server_keys')
      .values({ name, value: make() })
      .onConflict((conflict) => conflict.column('name').doNothing())
      .execute();
    const row = await this.db.selectFrom('server_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
    return row.value;
  }

  async webhookOf(userId: string): Promise<UserWebhook | undefined> {
    return this.db.selectFrom('user_webhooks').select(['url', 'secret']).where('user_id', '=', userId).executeTakeFirst();
  }

  async setWebhook(userId: string, webhook: UserWebhook | null): Promise<void> {
    if (!webhook) {
      await this.db.deleteFrom('user_webhooks').where('user_id', '=', userId).execute();
      return;
    }
    const row = { url: webhook.url, secret: webhook.secret, updated_at: new Date().toISOString() };
    await this.db
      .insertInto('user_webhooks')
      .values({ user_id: userId, ...row })
      .onConflict((conflict) => conflict.column('user_id').doUpdateSet(row))
      .execute();
  }
}

/** Push subscriptions in memory (a store in memory: tests of one module). */
export class MemoryPushStore implements PushStore {
  private readonly subscriptions = new Map<string, PushSubscriptionRecord>();
  private readonly keys = new Map<string, string>();

  async subscribe(subscription: PushSubscriptionRecord): Promise<void> {
    this.subscriptions.set(subscription.endpoint, { ...subscription });
  }

  async unsubscribe(userId: string, endpoint: string): Promise<boolean> {
    if (this.subscriptions.get(endpoint)?.userId !== userId) return false;
    return this.subscriptions.delete(endpoint);
  }

  async forUser(userId: string): Promise<PushSubscriptionRecord[]> {
    return [...this.subscriptions.values()].filter((subscription) => subscription.userId === userId);
  }

  async drop(endpoint: string): Promise<void> {
    this.subscriptions.delete(endpoint);
  }

  async serverKey(name: string, make: () => string): Promise<string> {
    if (!this.keys.has(name)) this.keys.set(name, make());
    return this.keys.get(name)!;
  }

  private readonly webhooks = new Map<string, UserWebhook>();

  async webhookOf(userId: string): Promise<UserWebhook | undefined> {
    const webhook = this.webhooks.get(userId);
    return webhook && { ...webhook };
  }

  async setWebhook(userId: string, webhook: UserWebhook | null): Promise<void> {
    if (webhook) this.webhooks.set(userId, { ...webhook });
    else this.webhooks.delete(userId);
  }
}
