import type { Kysely } from 'kysely';
import type { SchemaStep } from './schema-steps.ts';

/** How a message sent during a run is delivered (the wire's `delivery`). */
export type WaitingDelivery = 'steer' | 'queue' | 'interrupt';

/** A person's message sent while the session's run was going, kept until the run takes it (or it is withdrawn). */
export interface WaitingMessage {
  id: string;
  sessionId: string;
  delivery: WaitingDelivery;
  content: string;
  /** The branch a steer is for (a research task, a plan step). */
  nodeId?: string | undefined;
  /** A queued message's whole `chat` message (JSON), to start its run with. */
  chat?: string | undefined;
  createdAt: string;
}

/** What became of a waiting message: taken by its run (`applied`), its run started (`started`), or withdrawn. */
export type WaitingOutcome = 'applied' | 'started' | 'cancelled';

/**
 * The messages people sent to running runs, stored before they are acknowledged: a steer waits
 * for its run's next boundary, a queued message for the run to end. Wherever the run executes
 * (after a restart, on another instance), it finds them here; each is settled once (`settle`
 * changes only a message that still waits), so it is applied, started or withdrawn once.
 */
export interface WaitingMessages {
  /** Stores a message unless `max` wait in the session already; resolves with its place (from 1), or undefined when full. */
  add(message: Omit<WaitingMessage, 'createdAt'>, max: number): Promise<number | undefined>;
  /** The session's waiting messages, oldest first. */
  waiting(sessionId: string): Promise<WaitingMessage[]>;
  /** Settles a message that still waits; false when it had been settled already (or never was). */
  settle(id: string, outcome: WaitingOutcome): Promise<boolean>;
}

type Row = {
  seq: number;
  id: string;
  session_id: string;
  delivery: WaitingDelivery;
  content: string;
  node_id: string | null;
  chat: string | null;
  status: 'waiting' | WaitingOutcome;
  created_at: string | Date;
};

/** The table, as both databases return it. */
export type WaitingTables = { waiting_messages: Row };

const iso = (time: string | Date): string => (typeof time === 'string' ? new Date(time).toISOString() : time.toISOString());

function fromRow(row: Row): WaitingMessage {
  return {
    id: row.id,
    sessionId: row.session_id,
    delivery: row.delivery,
    content: row.content,
    ...(row.node_id === null ? {} : { nodeId: row.node_id }),
    ...(row.chat === null ? {} : { chat: row.chat }),
    createdAt: iso(row.created_at),
  };
}

/** The waiting messages on the store's SQL database (SQLite or PostgreSQL). */
export class SqlWaitingMessages implements WaitingMessages {
  constructor(private readonly db: Kysely<WaitingTables>) {}

  async add(message: Omit<WaitingMessage, 'createdAt'>, max: number): Promise<number | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const { count, last } = await tx
        .selectFrom('waiting_messages')
        .select((eb) => [
          eb.fn.sum<number | string | bigint | null>(eb.case().when('status', '=', 'waiting').then(1).else(0).end()).as('count'),
          eb.fn.max<number | string | bigint | null>('seq').as('last'),
        ])
        .where('session_id', '=', message.sessionId)
        .executeTakeFirstOrThrow();
      const waiting = Number(count ?? 0);
      if (waiting >= max) return undefined;
      await tx
        .insertInto('waiting_messages')
        .values({
          seq: Number(last ?? 0) + 1,
          id: message.id,
          session_id: message.sessionId,
          delivery: message.delivery,
          content: message.content,
          node_id: message.nodeId ?? null,
          chat: message.chat ?? null,
          status: 'waiting',
          created_at: new Date().toISOString(),
        })
        .execute();
      return waiting + 1;
    });
  }

  async waiting(sessionId: string): Promise<WaitingMessage[]> {
    const rows = await this.db
      .selectFrom('waiting_messages')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('status', '=', 'waiting')
      .orderBy('seq')
      .execute();
    return rows.map(fromRow);
  }

  async settle(id: string, outcome: WaitingOutcome): Promise<boolean> {
    const { numUpdatedRows } = await this.db
      .updateTable('waiting_messages')
      .set({ status: outcome })
      .where('id', '=', id)
      .where('status', '=', 'waiting')
      .executeTakeFirst();
    return numUpdatedRows > 0n;
  }
}

/** The waiting messages in memory (a store in memory: tests of one module). */
export class MemoryWaitingMessages implements WaitingMessages {
  private readonly rows: (WaitingMessage & { status: Row['status'] })[] = [];

  async add(message: Omit<WaitingMessage, 'createdAt'>, max: number): Promise<number | undefined> {
    const waiting = this.rows.filter((row) => row.sessionId === message.sessionId && row.status === 'waiting').length;
    if (waiting >= max) return undefined;
    this.rows.push({ ...message, createdAt: new Date().toISOString(), status: 'waiting' });
    return waiting + 1;
  }

  async waiting(sessionId: string): Promise<WaitingMessage[]> {
    return this.rows.filter((row) => row.sessionId === sessionId && row.status === 'waiting').map(({ status: _status, ...message }) => message);
  }

  async settle(id: string, outcome: WaitingOutcome): Promise<boolean> {
    const row = this.rows.find((candidate) => candidate.id === id && candidate.status === 'waiting');
    if (!row) return false;
    row.status = outcome;
    return true;
  }
}

/** The schema step of the table: one row per message, in the order sent (`seq`), deleted with its session. */
export const WAITING_MESSAGES_STEP: SchemaStep = {
  name: '0016 messages sent to a running run, until it takes them',
  postgres: [
    `
      create table waiting_messages (
        seq integer not null,
        id text primary key,
        session_id uuid not null references sessions (id) on delete cascade,
        delivery text not null,
        content text not null,
        node_id text,
        chat text,
        status text not null default 'waiting',
        created_at timestamptz not null default now()
      )
    `,
    `create index waiting_messages_session on waiting_messages (session_id, seq) where status = 'waiting'`,
  ],
  sqlite: [
    `
      create table waiting_messages (
        seq integer not null,
        id text primary key,
        session_id text not null references sessions (id) on delete cascade,
        delivery text not null,
        content text not null,
        node_id text,
        chat text,
        status text not null default 'waiting',
        created_at text not null
      ) strict
    `,
    `create index waiting_messages_session on waiting_messages (session_id, seq) where status = 'waiting'`,
  ],
};
