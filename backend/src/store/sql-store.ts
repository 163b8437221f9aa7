import { setImmediate as nextTurn } from 'node:timers/promises';
import type { LoggedEvent } from '@stepwise/shared-types';
import {
  type Compilable,
  CompiledQuery,
  type Generated,
  type Kysely,
  type QueryCreator,
  type RawBuilder,
  type Selectable,
  type Transaction,
  sql,
} from 'kysely';
import type { LlmMessage } from '../messages.ts';
import { type DeliveryOutbox, type DeliveryTables, SqlDeliveryOutbox } from './delivery-outbox.ts';
import { type PushStore, type PushTables, SqlPushStore } from './push-store.ts';
import { SEARCH_EXPRESSIONS, type SqlDialectName } from './migrations.ts';
import type { GroupSync } from './sqlite-database.ts';
import { fromSnapshotColumn, toSnapshotColumn } from './snapshot-column.ts';
import { listSettingsChanges, readAppSettings, saveAppSettings, type SettingsTables } from './sql-settings.ts';
import {
  type AppSettingsRecord,
  type Fence,
  type FenceToken,
  type JournalEntry,
  LOCAL_OWNER,
  type MessagePage,
  type MessageRecord,
  type NewRun,
  type RunEnd,
  HIGHLIGHT_END,
  HIGHLIGHT_START,
  type RunRecord,
  type SearchHit,
  type SearchQuery,
  type SessionOwner,
  type SessionRecord,
  type SettingsChangeRecord,
  type ShareRecord,
  type SnapshotRecord,
  StaleLeaseError,
  type Store,
  titleFrom,
} from './store.ts';

/**
 * The tables as both databases return them. A time is a Date from PostgreSQL and ISO text from
 * SQLite; a 64-bit count a string from node-postgres; JSON parsed from PostgreSQL and text from
 * SQLite. Every write passes times as ISO text and JSON as text, which both take.
 */
type Time = Date | string;
type Json = unknown;

export interface Tables extends SettingsTables, DeliveryTables, PushTables {
  sessions: { id: string; title: string | null; created_at: Time; updated_at: Time; owner: string; owner_name: string | null };
  revoked_sign_ins: { id: string; expires_at: Time };
  chat_shares: {
    id: string;
    token_hash: string;
    session_id: string;
    created_by: string;
    at_seq: number;
    include_files: boolean | number;
    created_at: Time;
    expires_at: Time | null;
  };
  messages: { session_id: string; position: number; message: Json; after_seq: number; created_at: Time };
  runs: {
    id: string;
    session_id: string;
    strategy: string;
    max_steps: number;
    status: RunRecord['status'];
    end_reason: Generated<string | null>;
    steps: Generated<number | null>;
    prompt_tokens: Generated<number | string | bigint>;
    completion_tokens: Generated<number | string | bigint>;
    after_seq: number | null;
    started_at: Time;
    ended_at: Generated<Time | null>;
    checkpoint: Generated<Json | null>;
    spending: Generated<Json | null>;
  };
  events: { session_id: string; seq: number; run_id: string | null; payload: Json };
  run_journal: { run_id: string; position: number; kind: string; key: string; value: Json; step: number };
  snapshots: {
    id: string;
    session_id: string;
    label: string;
    kind: SnapshotRecord['kind'];
    run_id: string | null;
    step: number | null;
    at_seq: number;
    messages: Json;
    created_at: Time;
  };
}

type Db = Kysely<Tables> | Transaction<Tables>;

/** A search hit as both databases return it (position -1: the title). */
interface SearchRow {
  session_id: string;
  title: string | null;
  updated_at: Time;
  owner: string;
  owner_name: string | null;
  position: number | null;
  role: string | null;
  after_seq: number | null;
  snippet: string;
}

/** A row to write, with the lease it was made under (looked up when it is added, not when its group is written). */
type EventWrite = { sessionId: string; event: LoggedEvent; token: FenceToken | undefined };
type JournalWrite = { runId: string; entry: JournalEntry; token: FenceToken | undefined };
type Write = EventWrite | JournalWrite;

/** Most rows written in one statement (at most 9 parameters each: under SQLite's 32766 and PostgreSQL's 65535). */
const BATCH_LIMIT = 1_000;

const SNAPSHOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Group commit: rows that arrive while a write is in progress are written together in the next
 * commit, in the order they came, and each caller resumes once its own row is committed. A run
 * does not wait for each of its rows (see SessionEventLog and JournalReplay): a model call's journal
 * entry and its events go in one commit, while the next call is under way; and N sessions whose
 * model replies arrive together cost a few commits rather than N (each an fsync with DB_SYNC=full,
 * a round trip on PostgreSQL). Groups commit one after another, so once a row is committed every
 * row added before it is too (or was refused). A group starts two turns of the event loop after
 * its first row (see afterTheRequests): what the same I/O callbacks add (a model reply's journal
 * entry and the events that show it, other sessions' replies read in the same poll) joins it,
 * rather than the first row committing alone and the rest after it.
 */
class GroupWriter<T> {
  private readonly pending: { row: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** The drain under way, if any: it writes until nothing is pending. */
  private writing: Promise<void> | undefined;

  /** `insert` writes the rows it may, and returns the errors of those it refused (by index), if any. */
  constructor(private readonly insert: (rows: T[]) => Promise<Map<number, Error> | undefined>) {}

  /** The last row added, settled (written or refused): rows settle in order. */
  private last: Promise<void> = Promise.resolve();

  add(row: T): Promise<void> {
    const added = new Promise<void>((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      this.writing ??= afterTheRequests().then(() => this.drain());
    });
    this.last = added.catch(() => undefined);
    return added;
  }

  /** Resolves once every row added so far is written (or refused); rows added meanwhile are not waited for. */
  async flush(): Promise<void> {
    await this.last;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, BATCH_LIMIT);
        const settle = (item: (typeof batch)[number], refused: Error | undefined) => (refused ? item.reject(refused) : item.resolve());
        try {
          const refused = await this.insert(batch.map((item) => item.row));
          for (const [index, item] of batch.entries()) settle(item, refused?.get(index));
        } catch (error) {
          // One bad row (a seq already taken) must fail only its own caller: retry one by one.
          // Not when the group was committed and only its sync to disk failed: then it fails whole.
          if (batch.length === 1 || (error as { committed?: boolean }).committed) for (const item of batch) item.reject(error);
          else for (const item of batch) await this.insert([item.row]).then((refused) => settle(item, refused?.get(0)), item.reject);
        }
      }
    } finally {
      // In the same turn as the last look at `pending`: a row added after it starts a new drain.
      this.writing = undefined;
    }
  }
}

/**
 * When a group starts its commit: two turns of the event loop (setImmediate) after its first row.
 * The first turn lets the rest of the I/O callbacks' rows join it. The second lets the model
 * request the run makes next leave first: undici writes a request on a reused keep-alive
 * connection in a setImmediate of its own (after checking that the server did not close it), queued
 * after the group's first. A commit is CPU on this thread (SQLite's page writes) or a round trip
 * (PostgreSQL); started after the request, it overlaps the model's answer instead of holding up
 * its question. Nothing waits on it that may not: events are sent, and a tool's start lets the
 * tool run, only once the group has committed.
 */
async function afterTheRequests(): Promise<void> {
  await nextTurn();
  await nextTurn();
}

/** Most insert texts kept (one per statement and row count). */
const COMPILED_LIMIT = 512;

/**
 * The hot inserts (every model call's events and journal entry) compiled by Kysely once per row
 * count, then run again with new values: building and compiling the same insert each time cost
 * more than SQLite's running it (0.24 ms of Kysely per model call in a profile of the overhead task).
 * The first compile of each shape checks that its parameters are the rows' values in order.
 */
class CompiledInserts {
  private readonly texts = new Map<string, string>();

  async run(db: Db, name: string, rows: unknown[][], build: () => Compilable): Promise<void> {
    const key = `${name}:${rows.length}`;
    const parameters = rows.flat();
    const text = this.texts.get(key);
    if (text !== undefined) {
      await db.executeQuery(CompiledQuery.raw(text, parameters));
      return;
    }
    const compiled = build().compile();
    if (compiled.parameters.length !== parameters.length || compiled.parameters.some((value, index) => value !== parameters[index])) {
      throw new Error(`The ${name} insert does not take its rows' values in order`);
    }
    if (this.texts.size < COMPILED_LIMIT) this.texts.set(key, compiled.sql);
    await db.executeQuery(compiled);
  }
}

/** Event rows as the table takes them, and their values in column order. */
const eventValues = (rows: EventWrite[]): Tables['events'][] =>
  rows.map(({ sessionId, event }) => ({ session_id: sessionId, seq: event.seq, run_id: event.run_id ?? null, payload: json(event) }));
const eventParameters = (row: Tables['events']) => [row.session_id, row.seq, row.run_id, row.payload];

/** Journal rows as the table takes them, and their values in column order. */
const journalValues = (rows: JournalWrite[]): Tables['run_journal'][] =>
  rows.map(({ runId, entry }) => ({
    run_id: runId,
    position: entry.position,
    kind: entry.kind,
    key: entry.key,
    value: json(entry.value ?? null),
    step: entry.step ?? 0,
  }));
const journalParameters = (row: Tables['run_journal']) => [row.run_id, row.position, row.kind, row.key, row.value, row.step];

/** The journal's insert: an entry written again at its position (a truncated past re-recorded) replaces it. */
function journalInsert(creator: Pick<QueryCreator<Tables>, 'insertInto'>, values: Tables['run_journal'][]) {
  return creator
    .insertInto('run_journal')
    .values(values)
    .onConflict((conflict) =>
      conflict.columns(['run_id', 'position']).doUpdateSet((row) => ({
        kind: row.ref('excluded.kind'),
        key: row.ref('excluded.key'),
        value: row.ref('excluded.value'),
        step: row.ref('excluded.step'),
      })),
    );
}

const iso = (value: Time) => new Date(value).toISOString();
const json = (value: unknown) => JSON.stringify(value);
/** Reads a JSON column: PostgreSQL's driver has parsed it already (a JSON string comes back as a string); SQLite's is text. */
type JsonReader = <T>(value: unknown) => T;
const parsedByDriver: JsonReader = <T>(value: unknown) => value as T;
const parseText: JsonReader = <T>(value: unknown) => JSON.parse(value as string) as T;
/**
 * A token count to add to a run's total: a whole number from 0 to Number.MAX_SAFE_INTEGER, so that
 * totals (capped there too) read back as exact numbers.
 */
const tokenCount = (value: number | undefined) =>
  value !== undefined && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER) : 0;

/** The rows `missing` says were not written, each refused with StaleLeaseError. */
function refusals<T>(rows: T[], missing: (row: T) => boolean, sessionOf: (row: T, index: number) => string): Map<number, Error> | undefined {
  const refused = new Map<number, Error>();
  for (const [index, row] of rows.entries()) if (missing(row)) refused.set(index, new StaleLeaseError(sessionOf(row, index)));
  return refused.size > 0 ? refused : undefined;
}

/**
 * Where the two databases differ, in one place: the smaller of two numbers, how JSON reads back, and fenced writes
 * (leases live in PostgreSQL only: several instances need a shared server).
 */
const DIALECTS: Record<SqlDialectName, { least: string; json: JsonReader }> = {
  sqlite: { least: 'min', json: parseText },
  postgres: { least: 'least', json: parsedByDriver },
};

/**
 * A fenced row is written only while its lease (session, instance, generation) is the session's;
 * a row without one (no lease held: a file saved between runs) is written as before. PostgreSQL only.
 */
const FENCED = sql`(v.instance_id is null or exists (
  select 1 from session_leases l where l.session_id = v.session_id::text and l.instance_id = v.instance_id and l.generation = v.generation for share))`;

/** Typed VALUES rows (`($1::uuid, $2::integer), …`): a VALUES list read by a select has no column types of its own. */
const typedValues = (rows: unknown[][], types: string[]): RawBuilder<unknown> =>
  sql.join(rows.map((row) => sql`(${sql.join(row.map((value, column) => sql`${value}::${sql.raw(types[column]!)}`))})`));

/**
 * The Store on SQL, one set of queries for both databases: embedded SQLite (the default, libsql)
 * and a PostgreSQL server (DATABASE_URL), through Kysely. Every write has committed when its
 * promise resolves, so an event is stored before anyone is sent it; events and journal entries of
 * many sessions at once are committed together (GroupWriter). With several instances (PostgreSQL)
 * a run's writes are fenced by its lease (fenceWith).
 */
export class SqlStore implements Store {
  private fence: Fence | undefined;
  private clock = 0;
  private readonly inserts = new CompiledInserts();
  private readonly least: string;
  private readonly parsed: JsonReader;

  constructor(
    private readonly db: Kysely<Tables>,
    readonly dialect: SqlDialectName,
    /** Names the database for logs, without secrets. */
    readonly description: string,
    options: {
      /** The schema steps applied when the store opened. */
      migrated?: string[];
      /** Called once the store has closed Kysely (SQLite: fold the log into the file and close it). */
      onClose?: () => Promise<void> | void;
      /** How group commits reach the disk, when not left to the database (SQLite with DB_SYNC=full). */
      groupSync?: GroupSync | undefined;
    } = {},
  ) {
    this.groupSync = options.groupSync;
    this.least = DIALECTS[dialect].least;
    this.parsed = DIALECTS[dialect].json;
    this.migrated = options.migrated ?? [];
    this.outbox = new SqlDeliveryOutbox(db);
    this.push = new SqlPushStore(db);
    this.onClose = options.onClose ?? (() => undefined);
  }

  /** The schema steps applied when the store opened (none when it was up to date). */
  readonly migrated: string[];
  readonly outbox: DeliveryOutbox;
  readonly push: PushStore;
  private readonly onClose: () => Promise<void> | void;

  /**
   * Several instances: from now on a run's events and journal entries are written only while the
   * lease they are made under is still the session's (see Fence); a stale instance's are refused.
   */
  fenceWith(fence: Fence): void {
    if (this.dialect !== 'postgres') throw new Error('Leases need PostgreSQL: several instances share a PostgreSQL server');
    this.fence = fence;
  }

  async createSession(id: string, owner: SessionOwner = { id: LOCAL_OWNER }): Promise<SessionRecord> {
    const now = this.now();
    const row = await this.db
      .insertInto('sessions')
      .values({ id, title: null, created_at: now, updated_at: now, owner: owner.id, owner_name: owner.name ?? null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toSession(row);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const row = await this.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toSession(row);
  }

  async renameSession(id: string, title: string): Promise<SessionRecord | undefined> {
    const row = await this.db.updateTable('sessions').set({ title }).where('id', '=', id).returningAll().executeTakeFirst();
    return row && toSession(row);
  }

  async adoptSession(id: string, owner: SessionOwner): Promise<SessionRecord | undefined> {
    // One statement: of two admins adopting one chat at once, one gets it.
    const row = await this.db
      .updateTable('sessions')
      .set({ owner: owner.id, owner_name: owner.name ?? null })
      .where('id', '=', id)
      .where('owner', '=', LOCAL_OWNER)
      .returningAll()
      .executeTakeFirst();
    return row && toSession(row);
  }

  async revokeSignIn(id: string, expiresAt: string): Promise<void> {
    const now = this.now();
    await this.db.transaction().execute(async (tx) => {
      // The ended sign-ins past their expiry are forgotten as new ones come: their cookies are refused anyway.
      await tx.deleteFrom('revoked_sign_ins').where('expires_at', '<', now).execute();
      await tx
        .insertInto('revoked_sign_ins')
        .values({ id, expires_at: expiresAt })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .execute();
    });
  }

  async isSignInRevoked(id: string): Promise<boolean> {
    const row = await this.db.selectFrom('revoked_sign_ins').select('id').where('id', '=', id).executeTakeFirst();
    return row !== undefined;
  }

  async listSessions(limit: number, owner?: string): Promise<SessionRecord[]> {
    const rows = await this.db
      .selectFrom('sessions')
      .selectAll()
      .$if(owner !== undefined, (query) => query.where('owner', '=', owner!))
      .orderBy('updated_at', 'desc')
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toSession);
  }

  async searchSessions(query: SearchQuery): Promise<SearchHit[]> {
    if (query.terms.length === 0) return [];
    const rows = this.dialect === 'sqlite' ? await this.searchSqlite(query) : await this.searchPostgres(query);
    return rows.map((row) => ({
      sessionId: row.session_id,
      title: row.title,
      updatedAt: iso(row.updated_at),
      owner: row.owner,
      ownerName: row.owner_name,
      message:
        row.position === null || Number(row.position) < 0
          ? undefined
          : { position: Number(row.position), role: row.role === 'user' ? 'user' : 'assistant', afterSeq: Number(row.after_seq ?? 0) },
      snippet: row.snippet,
    }));
  }

  /** FTS5 over search_docs (kept by triggers): every term as a prefix of a word, best match (bm25) first. */
  private async searchSqlite({ terms, owner, limit }: SearchQuery): Promise<SearchRow[]> {
    const match = terms.map((term) => `"${term.replaceAll('"', '""')}"*`).join(' ');
    const { rows } = await sql<SearchRow>`
      select d.session_id, s.title, s.updated_at, s.owner, s.owner_name, d.position,
        json_extract(m.message, '$.role') as role, m.after_seq,
        snippet(search_fts, 0, ${HIGHLIGHT_START}, ${HIGHLIGHT_END}, '…', 24) as snippet
      from search_fts
      join search_docs d on d.id = search_fts.rowid
      join sessions s on s.id = d.session_id
      left join messages m on m.session_id = d.session_id and m.position = d.position
      where search_fts match ${match} ${owner === undefined ? sql`` : sql`and s.owner = ${owner}`}
      order by bm25(search_fts), s.updated_at desc, d.position
      limit ${limit}`.execute(this.db);
    return rows;
  }

  /** The expression indexes of titles and messages: every term as a prefix of a word, best match (ts_rank) first. */
  private async searchPostgres({ terms, owner, limit }: SearchQuery): Promise<SearchRow[]> {
    const tsquery = terms.map((term) => `${term}:*`).join(' & ');
    const mine = owner === undefined ? sql`` : sql`and s.owner = ${owner}`;
    const title = sql.raw(SEARCH_EXPRESSIONS.postgresTitle);
    const message = sql.raw(SEARCH_EXPRESSIONS.postgresMessage);
    // A short text is shown whole (as SQLite's snippet does), a long one as the fragment around the match.
    const marks = `StartSel=${HIGHLIGHT_START}, StopSel=${HIGHLIGHT_END}`;
    // (HighlightAll holds only without fragments.)
    const [whole, fragment] = [`${marks}, HighlightAll=true`, `${marks}, MinWords=12, MaxWords=30, MaxFragments=1, FragmentDelimiter=" … "`];
    const { rows } = await sql<SearchRow>`
      with q as (select to_tsquery('english', ${tsquery}) as query)
      select hits.session_id, hits.title, hits.updated_at, hits.owner, hits.owner_name, hits.position, hits.role, hits.after_seq,
        ts_headline('english', hits.body, q.query, case when length(hits.body) <= 240 then ${whole} else ${fragment} end) as snippet
      from (
        select s.id::text as session_id, s.title, s.updated_at, s.owner, s.owner_name, -1 as position, null as role, null::integer as after_seq,
          s.title as body, ts_rank(${title}, q.query) as rank
        from sessions s, q where ${title} @@ q.query ${mine}
        union all
        select s.id::text, s.title, s.updated_at, s.owner, s.owner_name, m.position, m.message->>'role', m.after_seq,
          m.message->>'content', ts_rank(${message}, q.query)
        from messages m join sessions s on s.id = m.session_id, q where ${message} @@ q.query ${mine}
        order by rank desc, updated_at desc, position
        limit ${limit}
      ) hits, q
      order by hits.rank desc, hits.updated_at desc, hits.position`.execute(this.db);
    return rows;
  }

  async createShare(share: Omit<ShareRecord, 'createdAt'>): Promise<ShareRecord> {
    const createdAt = this.now();
    await this.db
      .insertInto('chat_shares')
      .values({
        id: share.id,
        token_hash: share.tokenHash,
        session_id: share.sessionId,
        created_by: share.createdBy,
        at_seq: share.atSeq,
        include_files: this.dialect === 'sqlite' ? Number(share.includeFiles) : share.includeFiles,
        created_at: createdAt,
        expires_at: share.expiresAt ?? null,
      })
      .execute();
    return { ...share, createdAt };
  }

  async findShare(tokenHash: string): Promise<ShareRecord | undefined> {
    const row = await this.db.selectFrom('chat_shares').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return row && toShare(row);
  }

  async listShares(sessionId: string): Promise<ShareRecord[]> {
    const rows = await this.db.selectFrom('chat_shares').selectAll().where('session_id', '=', sessionId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toShare);
  }

  async deleteShare(sessionId: string, id: string): Promise<boolean> {
    if (!SNAPSHOT_ID.test(id)) return false;
    const { numDeletedRows } = await this.db.deleteFrom('chat_shares').where('session_id', '=', sessionId).where('id', '=', id).executeTakeFirst();
    return numDeletedRows > 0n;
  }

  async deleteSession(id: string): Promise<boolean> {
    const { numDeletedRows } = await this.db.deleteFrom('sessions').where('id', '=', id).executeTakeFirst();
    return numDeletedRows > 0n;
  }

  async appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void> {
    if (messages.length === 0) return;
    const firstUser = messages.find((message) => message.role === 'user');
    const title = firstUser ? titleFrom(firstUser.content) : null;
    const now = this.now();
    // One transaction: the messages after the last one, and the session's activity and title.
    await this.db.transaction().execute(async (tx) => {
      const { position } = await tx
        .selectFrom('messages')
        .select(sql<number>`coalesce(max(position) + 1, 0)`.as('position'))
        .where('session_id', '=', sessionId)
        .executeTakeFirstOrThrow();
      await insertMessages(
        tx,
        messages.map((message, index) => ({
          session_id: sessionId,
          position: Number(position) + index,
          message: json(message),
          after_seq: afterSeq,
          created_at: now,
        })),
      );
      await tx
        .updateTable('sessions')
        .set({ updated_at: now, title: sql`coalesce(title, ${title})` })
        .where('id', '=', sessionId)
        .execute();
    });
  }

  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    const rows = await this.db.selectFrom('messages').select(['message', 'after_seq']).where('session_id', '=', sessionId).orderBy('position').execute();
    return rows.map((row) => ({ message: this.parsed<LlmMessage>(row.message), afterSeq: row.after_seq }));
  }

  async listLatestMessages(sessionId: string, limit: number, olderThan?: number): Promise<MessagePage> {
    let query = this.db.selectFrom('messages').select(['message', 'after_seq', 'position']).where('session_id', '=', sessionId);
    if (olderThan !== undefined) query = query.where('position', '<', olderThan);
    const rows = (await query.orderBy('position', 'desc').limit(limit).execute()).reverse();
    return {
      messages: rows.map((row) => ({ message: this.parsed<LlmMessage>(row.message), afterSeq: row.after_seq })),
      olderThan: rows.length < limit ? undefined : Number(rows[0]!.position),
    };
  }

  async createRun(run: NewRun): Promise<void> {
    await this.db
      .insertInto('runs')
      .values({
        id: run.id,
        session_id: run.sessionId,
        strategy: run.strategy,
        max_steps: run.maxSteps,
        status: 'running',
        after_seq: run.afterSeq ?? null,
        started_at: this.now(),
      })
      .execute();
  }

  async finishRun(runId: string, end: RunEnd): Promise<void> {
    const now = this.now();
    const capped = (column: 'prompt_tokens' | 'completion_tokens', add: number) =>
      sql<number>`${sql.raw(this.least)}(${sql.ref(column)} + ${add}, ${Number.MAX_SAFE_INTEGER})`;
    await this.db.transaction().execute(async (tx) => {
      const finished = await tx
        .updateTable('runs')
        .set({
          status: end.status,
          end_reason: end.endReason ?? null,
          steps: end.steps ?? null,
          ended_at: now,
          checkpoint: null,
          prompt_tokens: capped('prompt_tokens', tokenCount(end.usage?.promptTokens)),
          completion_tokens: capped('completion_tokens', tokenCount(end.usage?.completionTokens)),
          spending: sql`coalesce(${end.spending ? json(end.spending) : null}, spending)`,
        })
        .where('id', '=', runId)
        .returning('session_id')
        .executeTakeFirst();
      if (finished) await tx.updateTable('sessions').set({ updated_at: now }).where('id', '=', finished.session_id).execute();
    });
  }

  async saveCheckpoint(runId: string, checkpoint: unknown): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ checkpoint: checkpoint === null ? null : json(checkpoint) })
      .where('id', '=', runId)
      .execute();
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const row = await this.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirst();
    return row && toRun(row, this.parsed);
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    const rows = await this.db.selectFrom('runs').selectAll().where('session_id', '=', sessionId).orderBy('started_at').orderBy('id').execute();
    return rows.map((row) => toRun(row, this.parsed));
  }

  async listRunningRuns(): Promise<RunRecord[]> {
    const rows = await this.db.selectFrom('runs').selectAll().where('status', '=', 'running').orderBy('started_at').execute();
    return rows.map((row) => toRun(row, this.parsed));
  }

  /** Events of many sessions at once go in one commit, with the journal entries made before them (see GroupWriter). */
  appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    return this.writes.add({ sessionId, event, token: this.fence?.forSession(sessionId) });
  }

  /**
   * Events and journal entries, of every session, in the order they were made: each group is one
   * transaction, so an event is never committed without the journal entry made before it (a model
   * call's result with the events that show it).
   */
  private readonly writes = new GroupWriter<Write>(async (rows) => {
    const events = rows.flatMap((row, index) => ('event' in row ? [{ row, index }] : []));
    const entries = rows.flatMap((row, index) => ('entry' in row ? [{ row, index }] : []));
    const write = async (db: Db) => {
      const refusedEvents = events.length
        ? await this.insertEvents(
            db,
            events.map(({ row }) => row),
          )
        : undefined;
      const refusedEntries = entries.length
        ? await this.insertJournal(
            db,
            entries.map(({ row }) => row),
          )
        : undefined;
      if (!refusedEvents && !refusedEntries) return undefined;
      const refused = new Map<number, Error>();
      for (const [at, error] of refusedEvents ?? []) refused.set(events[at]!.index, error);
      for (const [at, error] of refusedEntries ?? []) refused.set(entries[at]!.index, error);
      return refused;
    };
    const both = events.length > 0 && entries.length > 0;
    if (both && this.dialect === 'postgres' && rows.every((row) => row.token === undefined)) {
      // One statement, atomic of itself: one round trip to the server instead of four (begin, two inserts, commit).
      return this.insertTogether(
        this.db,
        events.map(({ row }) => row as EventWrite),
        entries.map(({ row }) => row as JournalWrite),
      );
    }
    const commit = (db: Kysely<Tables>) => (both ? db.transaction().execute(write) : write(db));
    return this.groupSync ? this.groupSync.write(this.db, commit) : commit(this.db);
  });
  private readonly groupSync: GroupSync | undefined;

  private async insertEvents(db: Db, rows: EventWrite[]): Promise<Map<number, Error> | undefined> {
    const tokens = rows.map(({ token }) => token);
    const values = eventValues(rows);
    if (tokens.every((token) => token === undefined)) {
      await this.inserts.run(db, 'events', values.map(eventParameters), () => db.insertInto('events').values(values));
      return undefined;
    }
    return this.fencedEvents(db, values, tokens);
  }

  /** Events and journal entries without leases in one statement (PostgreSQL: an insert in a WITH runs whole). */
  private async insertTogether(db: Db, events: EventWrite[], entries: JournalWrite[]): Promise<undefined> {
    const eventRows = eventValues(events);
    const entryRows = journalValues(entries);
    const parameters = [...eventRows.map(eventParameters), ...entryRows.map(journalParameters)];
    await this.inserts.run(db, `events+run_journal:${eventRows.length}`, parameters, () =>
      journalInsert(
        db.with('written_events', (creator) => creator.insertInto('events').values(eventRows)),
        entryRows,
      ),
    );
    return undefined;
  }

  /** Events written only under their leases (PostgreSQL); the refused ones by index. */
  private async fencedEvents(db: Db, values: Tables['events'][], tokens: (FenceToken | undefined)[]): Promise<Map<number, Error> | undefined> {
    const rows = values.map((row, index) => [
      row.session_id,
      row.seq,
      row.run_id,
      row.payload,
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const { rows: written } = await sql<{ session_id: string; seq: number }>`
      insert into events (session_id, seq, run_id, payload)
      select v.session_id, v.seq, v.run_id, v.payload
      from (values ${typedValues(rows, ['uuid', 'integer', 'uuid', 'json', 'text', 'bigint'])}) as v (session_id, seq, run_id, payload, instance_id, generation)
      where ${FENCED}
      returning session_id, seq`.execute(db);
    const done = new Set(written.map((row) => `${row.session_id}:${row.seq}`));
    return refusals(
      values,
      (row) => !done.has(`${row.session_id}:${row.seq}`),
      (row) => row.session_id,
    );
  }

  async listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]> {
    const rows = await this.db
      .selectFrom('events')
      .select('payload')
      .where('session_id', '=', sessionId)
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .$if(limit !== undefined, (query) => query.limit(limit!))
      .execute();
    return rows.map((row) => this.parsed<LoggedEvent>(row.payload));
  }

  async lastSeq(sessionId: string): Promise<number> {
    const row = await this.db.selectFrom('events').select(sql<number>`coalesce(max(seq), 0)`.as('seq')).where('session_id', '=', sessionId).executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  /** Journal entries of many runs at once go in one commit, with the events made after them (see GroupWriter). */
  appendJournal(runId: string, entry: JournalEntry): Promise<void> {
    return this.writes.add({ runId, entry, token: this.fence?.forRun(runId) });
  }

  private async insertJournal(db: Db, rows: JournalWrite[]): Promise<Map<number, Error> | undefined> {
    const tokens = rows.map(({ token }) => token);
    const values = journalValues(rows);
    if (tokens.every((token) => token === undefined)) {
      // Two rows for one position in one statement fail it on PostgreSQL; GroupWriter then writes them one by one, in order.
      await this.inserts.run(db, 'run_journal', values.map(journalParameters), () => journalInsert(db, values));
      return undefined;
    }
    return this.fencedJournal(db, values, tokens);
  }

  /** Journal entries written only under their leases (PostgreSQL); the refused ones by index. */
  private async fencedJournal(db: Db, values: Tables['run_journal'][], tokens: (FenceToken | undefined)[]): Promise<Map<number, Error> | undefined> {
    const rows = values.map((row, index) => [
      row.run_id,
      row.position,
      row.kind,
      row.key,
      row.value,
      row.step,
      tokens[index]?.sessionId ?? null,
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const { rows: written } = await sql<{ run_id: string; position: number }>`
      insert into run_journal (run_id, position, kind, key, value, step)
      select v.run_id, v.position, v.kind, v.key, v.value, v.step
      from (values ${typedValues(rows, ['uuid', 'integer', 'text', 'text', 'json', 'integer', 'text', 'text', 'bigint'])})
        as v (run_id, position, kind, key, value, step, session_id, instance_id, generation)
      where ${FENCED}
      on conflict (run_id, position) do update set kind = excluded.kind, key = excluded.key, value = excluded.value, step = excluded.step
      returning run_id, position`.execute(db);
    const done = new Set(written.map((row) => `${row.run_id}:${row.position}`));
    return refusals(
      values,
      (row) => !done.has(`${row.run_id}:${row.position}`),
      (_row, index) => tokens[index]!.sessionId,
    );
  }

  async readJournal(runId: string): Promise<JournalEntry[]> {
    await this.writes.flush();
    const rows = await this.db
      .selectFrom('run_journal')
      .select(['position', 'kind', 'key', 'value', 'step'])
      .where('run_id', '=', runId)
      .orderBy('position')
      .execute();
    return rows.map((row) => ({ position: row.position, kind: row.kind, key: row.key, value: this.parsed<unknown>(row.value), step: row.step }));
  }

  async truncateJournal(runId: string, fromPosition: number): Promise<void> {
    // After the entries appended before it, which may still be on their way.
    await this.writes.flush();
    const token = this.fence?.forRun(runId);
    if (!token) {
      await this.db.deleteFrom('run_journal').where('run_id', '=', runId).where('position', '>=', fromPosition).execute();
      return;
    }
    const { rows } = await sql<{ held: boolean }>`
      with lease as (select 1 from session_leases l where l.session_id = ${token.sessionId} and l.instance_id = ${token.instanceId} and l.generation = ${token.generation} for share)
      , gone as (delete from run_journal where run_id = ${runId} and position >= ${fromPosition} and exists (select 1 from lease))
      select exists (select 1 from lease) as held`.execute(this.db);
    if (!rows[0]?.held) throw new StaleLeaseError(token.sessionId);
  }

  async saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>): Promise<SnapshotRecord> {
    const createdAt = this.now();
    // Its label may name the run's latest events: they are stored first.
    await this.writes.flush();
    await this.db
      .insertInto('snapshots')
      .values({
        id: snapshot.id,
        session_id: snapshot.sessionId,
        label: snapshot.label,
        kind: snapshot.kind,
        run_id: snapshot.runId ?? null,
        step: snapshot.step ?? null,
        at_seq: snapshot.atSeq,
        messages: json(toSnapshotColumn(snapshot)),
        created_at: createdAt,
      })
      .execute();
    return { ...snapshot, createdAt };
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    if (!SNAPSHOT_ID.test(id)) return undefined;
    const row = await this.db.selectFrom('snapshots').selectAll().where('id', '=', id).executeTakeFirst();
    return row && { ...toSnapshot(row), ...fromSnapshotColumn(this.parsed<unknown>(row.messages)) };
  }

  async listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]> {
    const rows = await this.db
      .selectFrom('snapshots')
      .select(['id', 'session_id', 'label', 'kind', 'run_id', 'step', 'at_seq', 'created_at'])
      .where('session_id', '=', sessionId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toSnapshot);
  }

  async replaceMessages(sessionId: string, messages: MessageRecord[]): Promise<void> {
    const now = this.now();
    await this.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('messages').where('session_id', '=', sessionId).execute();
      await insertMessages(
        tx,
        messages.map((record, position) => ({ session_id: sessionId, position, message: json(record.message), after_seq: record.afterSeq, created_at: now })),
      );
    });
  }

  readAppSettings(): Promise<AppSettingsRecord> {
    return readAppSettings(this.db, this.parsed);
  }

  saveAppSettings(version: number, settings: unknown, change: Omit<SettingsChangeRecord, 'version' | 'at'>): Promise<boolean> {
    return saveAppSettings(this.db, this.now(), version, settings, change);
  }

  listSettingsChanges(limit: number): Promise<SettingsChangeRecord[]> {
    return listSettingsChanges(this.db, this.parsed, limit);
  }

  async close(): Promise<void> {
    await this.writes.flush();
    await this.db.destroy();
    await this.onClose();
  }

  /** Strictly increasing times, so "newest first" is well defined even within one millisecond. */
  private now(): string {
    this.clock = Math.max(this.clock + 1, Date.now());
    return new Date(this.clock).toISOString();
  }
}

/** Inserts messages in statements of at most BATCH_LIMIT rows. */
async function insertMessages(db: Db, rows: Tables['messages'][]): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH_LIMIT) {
    await db
      .insertInto('messages')
      .values(rows.slice(start, start + BATCH_LIMIT))
      .execute();
  }
}

function toSession(row: Tables['sessions']): SessionRecord {
  return { id: row.id, title: row.title, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at), owner: row.owner, ownerName: row.owner_name };
}

function toShare(row: Tables['chat_shares']): ShareRecord {
  return {
    id: row.id,
    tokenHash: row.token_hash,
    sessionId: row.session_id,
    createdBy: row.created_by,
    atSeq: row.at_seq,
    includeFiles: Boolean(row.include_files),
    createdAt: iso(row.created_at),
    ...(row.expires_at === null ? {} : { expiresAt: iso(row.expires_at) }),
  };
}

function toRun(row: Selectable<Tables['runs']>, parsed: JsonReader): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    strategy: row.strategy,
    maxSteps: row.max_steps,
    status: row.status,
    endReason: row.end_reason ?? undefined,
    steps: row.steps ?? undefined,
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    afterSeq: row.after_seq ?? undefined,
    startedAt: iso(row.started_at),
    endedAt: row.ended_at ? iso(row.ended_at) : undefined,
    checkpoint: row.checkpoint === null || row.checkpoint === undefined ? undefined : parsed(row.checkpoint),
    spending: row.spending === null || row.spending === undefined ? undefined : parsed<RunRecord['spending']>(row.spending),
  };
}

function toSnapshot(row: Omit<Tables['snapshots'], 'messages'>): Omit<SnapshotRecord, 'messages'> {
  return {
    id: row.id,
    sessionId: row.session_id,
    label: row.label,
    kind: row.kind,
    ...(row.run_id === null ? {} : { runId: row.run_id }),
    ...(row.step === null ? {} : { step: row.step }),
    atSeq: row.at_seq,
    createdAt: iso(row.created_at),
  };
}
