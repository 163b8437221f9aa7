import type { LoggedEvent } from '@stepwise/shared-types';
import { SqlWaitingMessages, type WaitingMessages } from './waiting-messages.ts';
import { type Kysely, sql } from 'kysely';
import type { LlmMessage } from '../messages.ts';
import type { SqlDialectName } from './migrations.ts';
import { fromSnapshotColumn, toSnapshotColumn } from './snapshot-column.ts';
import { SqlLogWrites } from './sql-log-writes.ts';
import { searchSessions } from './sql-search.ts';
import { DIALECTS, insertMessages, type JsonReader, json, type Tables, tokenCount, toRun, toSession, toShare, toSnapshot } from './sql-tables.ts';
import type { GroupSync } from './sqlite-database.ts';
import { type DeliveryOutbox, SqlDeliveryOutbox } from './delivery-outbox.ts';
import { type PushStore, SqlPushStore } from './push-store.ts';
import { type AgentTaskStore, SqlAgentTaskStore } from './agent-task-store.ts';
import { listSettingsChanges, readAppSettings, saveAppSettings } from './sql-settings.ts';
import {
  type AppSettingsRecord,
  type Fence,
  type JournalEntry,
  LOCAL_OWNER,
  type MessagePage,
  type MessageRecord,
  type NewRun,
  type RunEnd,
  type RunRecord,
  type SearchHit,
  type SearchQuery,
  type SessionOwner,
  type SessionRecord,
  type SettingsChangeRecord,
  type ShareRecord,
  type SnapshotRecord,
  type Store,
  titleFrom,
} from './store.ts';

export type { Tables };

const SNAPSHOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  private readonly writes: SqlLogWrites;
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
    this.writes = new SqlLogWrites(db, dialect, options.groupSync);
    this.least = DIALECTS[dialect].least;
    this.parsed = DIALECTS[dialect].json;
    this.migrated = options.migrated ?? [];
    this.outbox = new SqlDeliveryOutbox(db);
    this.push = new SqlPushStore(db);
    this.waiting = new SqlWaitingMessages(db);
    this.agentTasks = new SqlAgentTaskStore(db);
    this.onClose = options.onClose ?? (() => undefined);
  }

  /** The schema steps applied when the store opened (none when it was up to date). */
  readonly migrated: string[];
  readonly outbox: DeliveryOutbox;
  readonly push: PushStore;
  readonly waiting: WaitingMessages;
  readonly agentTasks: AgentTaskStore;
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
    return searchSessions(this.db, this.dialect, query);
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

  async parkRun(runId: string, checkpoint: unknown): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ status: 'parked', checkpoint: json(checkpoint) })
      .where('id', '=', runId)
      .where('status', '=', 'running')
      .execute();
  }

  async unparkRun(runId: string): Promise<{ checkpoint: unknown } | undefined> {
    const row = await this.db
      .updateTable('runs')
      .set({ status: 'running' })
      .where('id', '=', runId)
      .where('status', '=', 'parked')
      .returning('checkpoint')
      .executeTakeFirst();
    return row && { checkpoint: row.checkpoint === null || row.checkpoint === undefined ? undefined : this.parsed(row.checkpoint) };
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
    return this.writes.appendEvent(sessionId, event, this.fence?.forSession(sessionId));
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
    return this.writes.appendJournal(runId, entry, this.fence?.forRun(runId));
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
    await this.writes.truncateJournal(runId, fromPosition, this.fence?.forRun(runId));
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
