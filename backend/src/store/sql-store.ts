import type { LoggedEvent } from '@stepwise/shared-types';
import { SqlWaitingMessages, type WaitingMessages } from './waiting-messages.ts';
import { type Kysely, sql } from 'kysely';
import type { LlmMessage } from '../messages.ts';
import type { SqlDialectName } from './migrations.ts';
import { isSignInRevoked, revokeSignIn } from './sql-sign-ins.ts';
import { SqlRuns } from './sql-runs.ts';
import { SqlSharesAndSnapshots } from './sql-shares-snapshots.ts';
import { SqlLogWrites } from './sql-log-writes.ts';
import { searchSessions } from './sql-search.ts';
import { DIALECTS, insertMessages, type JsonReader, json, type Tables, toSession } from './sql-tables.ts';
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
    this.parsed = DIALECTS[dialect].json;
    this.migrated = options.migrated ?? [];
    this.outbox = new SqlDeliveryOutbox(db);
    this.push = new SqlPushStore(db);
    this.waiting = new SqlWaitingMessages(db);
    this.agentTasks = new SqlAgentTaskStore(db);
    this.shares = new SqlSharesAndSnapshots(db, dialect, this.parsed);
    this.runs = new SqlRuns(db, DIALECTS[dialect].least, this.parsed);
    this.onClose = options.onClose ?? (() => undefined);
  }

  /** The schema steps applied when the store opened (none when it was up to date). */
  readonly migrated: string[];
  readonly outbox: DeliveryOutbox;
  readonly push: PushStore;
  readonly waiting: WaitingMessages;
  readonly agentTasks: AgentTaskStore;
  private readonly shares: SqlSharesAndSnapshots;
  private readonly runs: SqlRuns;
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

  revokeSignIn(id: string, expiresAt: string): Promise<void> {
    return revokeSignIn(this.db, this.now(), id, expiresAt);
  }

  isSignInRevoked(id: string): Promise<boolean> {
    return isSignInRevoked(this.db, id);
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

  createShare(share: Omit<ShareRecord, 'createdAt'>): Promise<ShareRecord> {
    return this.shares.createShare(share, this.now());
  }

  findShare(tokenHash: string): Promise<ShareRecord | undefined> {
    return this.shares.findShare(tokenHash);
  }

  listShares(sessionId: string): Promise<ShareRecord[]> {
    return this.shares.listShares(sessionId);
  }

  deleteShare(sessionId: string, id: string): Promise<boolean> {
    return this.shares.deleteShare(sessionId, id);
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

  createRun(run: NewRun): Promise<void> {
    return this.runs.createRun(run, this.now());
  }

  finishRun(runId: string, end: RunEnd): Promise<void> {
    return this.runs.finishRun(runId, end, this.now());
  }

  saveCheckpoint(runId: string, checkpoint: unknown): Promise<void> {
    return this.runs.saveCheckpoint(runId, checkpoint);
  }

  parkRun(runId: string, checkpoint: unknown): Promise<void> {
    return this.runs.parkRun(runId, checkpoint);
  }

  unparkRun(runId: string): Promise<{ checkpoint: unknown } | undefined> {
    return this.runs.unparkRun(runId);
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.runs.getRun(runId);
  }

  listRuns(sessionId: string): Promise<RunRecord[]> {
    return this.runs.listRuns(sessionId);
  }

  lastRun(sessionId: string): Promise<RunRecord | undefined> {
    return this.runs.lastRun(sessionId);
  }

  listRunningRuns(): Promise<RunRecord[]> {
    return this.runs.listRunningRuns();
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
    return this.shares.saveSnapshot(snapshot, createdAt);
  }

  getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    return this.shares.getSnapshot(id);
  }

  listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]> {
    return this.shares.listSnapshots(sessionId);
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
