import type { Kysely } from 'kysely';

/** A notification waiting to be delivered to one target (a webhook URL), kept until it is. */
export interface Delivery {
  /** Names the delivery: the same on every attempt (the webhook's `webhook-id`). */
  id: string;
  /** Where it goes: a webhook URL. */
  target: string;
  /** The body as sent, JSON. */
  payload: string;
  /** Attempts made so far. */
  attempts: number;
  createdAt: string;
}

/** How an attempt went: delivered, to try again at a time, or given up. */
export type DeliveryOutcome = { kind: 'delivered' } | { kind: 'retry'; at: string; error: string } | { kind: 'given_up'; error: string };

/**
 * The notifications waiting for delivery (an outbox): written when the event that causes them is
 * stored, taken by one instance at a time (a claim that lapses, so that a delivery an instance
 * died holding is taken again), and kept until they are delivered or given up.
 */
export interface DeliveryOutbox {
  add(delivery: Omit<Delivery, 'attempts' | 'createdAt'>): Promise<void>;
  /**
   * Claims up to `limit` deliveries due at `now` that nobody holds (or whose holder's claim lapsed),
   * for `holder` until `until`: each is attempted by one holder at a time.
   */
  claimDue(holder: string, now: string, until: string, limit: number): Promise<Delivery[]>;
  /** Records how an attempt went and lets the delivery go (done, or due again later). */
  settle(id: string, holder: string, outcome: DeliveryOutcome): Promise<void>;
  /** When the next delivery nobody holds is due (ISO), if any. */
  nextDue(): Promise<string | undefined>;
  /** Lets go of every claim: for a store only this process uses, at its start (a claim left by a process that died). */
  releaseHolds(): Promise<void>;
}

/** The outbox's table, as both databases return it (times ISO text from SQLite, Date from PostgreSQL). */
export type DeliveryTables = {
  deliveries: {
    id: string;
    target: string;
    payload: string;
    attempts: number;
    status: 'pending' | 'delivered' | 'given_up';
    due_at: string | Date;
    held_by: string | null;
    held_until: string | Date | null;
    last_error: string | null;
    created_at: string | Date;
  };
};

const iso = (time: string | Date): string => (typeof time === 'string' ? new Date(time).toISOString() : time.toISOString());

/** The outbox on the store's SQL database (SQLite or PostgreSQL). */
export class SqlDeliveryOutbox implements DeliveryOutbox {
  constructor(private readonly db: Kysely<DeliveryTables>) {}

  async add(delivery: Omit<Delivery, 'attempts' | 'createdAt'>): Promise<void> {
    const now = new Date().toISOString();
    await this.db
      .insertInto('deliveries')
      .values({ ...delivery, attempts: 0, status: 'pending', due_at: now, held_by: null, held_until: null, last_error: null, created_at: now })
      .onConflict((conflict) => conflict.column('id').doNothing())
      .execute();
  }

  async claimDue(holder: string, now: string, until: string, limit: number): Promise<Delivery[]> {
    // One statement: two instances claiming at once never both get a row (the row's update is atomic
    // and re-checks the condition), and a lapsed claim is taken over.
    const rows = await this.db
      .updateTable('deliveries')
      .set({ held_by: holder, held_until: until })
      .where('id', 'in', (query) =>
        query
          .selectFrom('deliveries')
          .select('id')
          .where('status', '=', 'pending')
          .where('due_at', '<=', now)
          .where((where) => where.or([where('held_until', 'is', null), where('held_until', '<', now)]))
          .orderBy('due_at')
          .limit(limit),
      )
      .where('status', '=', 'pending')
      .where((where) => where.or([where('held_until', 'is', null), where('held_until', '<', now)]))
      .returning(['id', 'target', 'payload', 'attempts', 'created_at'])
      .execute();
    return rows.map((row) => ({ id: row.id, target: row.target, payload: row.payload, attempts: row.attempts, createdAt: iso(row.created_at) }));
  }

  async settle(id: string, holder: string, outcome: DeliveryOutcome): Promise<void> {
    const base = this.db.updateTable('deliveries').where('id', '=', id).where('held_by', '=', holder);
    const attempt = { held_by: null, held_until: null } as const;
    if (outcome.kind === 'delivered') {
      await base.set((eb) => ({ ...attempt, status: 'delivered', attempts: eb('attempts', '+', 1), last_error: null })).execute();
    } else if (outcome.kind === 'retry') {
      await base.set((eb) => ({ ...attempt, due_at: outcome.at, attempts: eb('attempts', '+', 1), last_error: outcome.error })).execute();
    } else {
      await base.set((eb) => ({ ...attempt, status: 'given_up', attempts: eb('attempts', '+', 1), last_error: outcome.error })).execute();
    }
  }

  async nextDue(): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.min('due_at').as('due'))
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return row?.due ? iso(row.due) : undefined;
  }

  async releaseHolds(): Promise<void> {
    await this.db.updateTable('deliveries').set({ held_by: null, held_until: null }).where('status', '=', 'pending').where('held_by', 'is not', null).execute();
  }
}

/** The outbox in memory (a store in memory: tests of one module). */
export class MemoryDeliveryOutbox implements DeliveryOutbox {
  private readonly rows = new Map<string, Delivery & { status: string; dueAt: string; heldBy?: string; heldUntil?: string; lastError?: string }>();

  async add(delivery: Omit<Delivery, 'attempts' | 'createdAt'>): Promise<void> {
    if (this.rows.has(delivery.id)) return;
    const now = new Date().toISOString();
    this.rows.set(delivery.id, { ...delivery, attempts: 0, createdAt: now, status: 'pending', dueAt: now });
  }

  async claimDue(holder: string, now: string, until: string, limit: number): Promise<Delivery[]> {
    const due = [...this.rows.values()]
      .filter((row) => row.status === 'pending' && row.dueAt <= now && (!row.heldUntil || row.heldUntil < now))
      .sort((a, b) => a.dueAt.localeCompare(b.dueAt))
      .slice(0, limit);
    for (const row of due) Object.assign(row, { heldBy: holder, heldUntil: until });
    return due.map(({ id, target, payload, attempts, createdAt }) => ({ id, target, payload, attempts, createdAt }));
  }

  async settle(id: string, holder: string, outcome: DeliveryOutcome): Promise<void> {
    const row = this.rows.get(id);
    if (!row || row.heldBy !== holder) return;
    Object.assign(row, { heldBy: undefined, heldUntil: undefined, attempts: row.attempts + 1 });
    if (outcome.kind === 'delivered') row.status = 'delivered';
    else if (outcome.kind === 'retry') Object.assign(row, { dueAt: outcome.at, lastError: outcome.error });
    else Object.assign(row, { status: 'given_up', lastError: outcome.error });
  }

  async nextDue(): Promise<string | undefined> {
    const due = [...this.rows.values()].filter((row) => row.status === 'pending').map((row) => row.dueAt);
    return due.length ? due.sort()[0] : undefined;
  }

  async releaseHolds(): Promise<void> {
    for (const row of this.rows.values()) Object.assign(row, { heldBy: undefined, heldUntil: undefined });
  }
}
