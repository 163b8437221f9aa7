import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../messages.ts';
import { closeSqliteDatabase, type SqliteConnection } from './sqlite-database.ts';
import {
  type JournalEntry,
  type MessageRecord,
  type SnapshotRecord,
  type NewRun,
  type RunEnd,
  type RunRecord,
  type SessionRecord,
  type SessionOwner,
  type Store,
  LOCAL_OWNER,
  titleFrom,
} from './store.ts';
import { fromSnapshotColumn, toSnapshotColumn } from './snapshot-column.ts';

interface SessionRow {
  id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  owner: string;
  owner_name: string | null;
}

interface RunRow {
  id: string;
  session_id: string;
  strategy: string;
  max_steps: number;
  status: RunRecord['status'];
  end_reason: string | null;
  steps: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  after_seq: number | null;
  started_at: string;
  ended_at: string | null;
  checkpoint: string | null;
  spending: string | null;
}

const SESSION_COLUMNS = 'id, title, created_at, updated_at, owner, owner_name';
const RUN_COLUMNS =
  'id, session_id, strategy, max_steps, status, end_reason, steps, prompt_tokens, completion_tokens, after_seq, started_at, ended_at, checkpoint, spending';

/**
 * A token count to add to a run's total: a whole number from 0 to Number.MAX_SAFE_INTEGER, so that
 * totals (capped there too) read back as exact numbers.
 */
const tokenCount = (value: number | undefined) =>
  value !== undefined && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER) : 0;

/** A write waiting for the group commit at the end of the event loop's turn. */
interface PendingWrite {
  write: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Every statement the store runs, prepared once when it opens. */
function prepareStatements(db: SqliteConnection) {
  return {
    insertSession: db.prepare(
      `insert into sessions (id, title, created_at, updated_at, owner, owner_name) values (?, null, ?, ?, ?, ?) returning ${SESSION_COLUMNS}`,
    ),
    getSession: db.prepare(`select ${SESSION_COLUMNS} from sessions where id = ?`),
    renameSession: db.prepare(`update sessions set title = ? where id = ? returning ${SESSION_COLUMNS}`),
    listSessions: db.prepare(`select ${SESSION_COLUMNS} from sessions order by updated_at desc, created_at desc limit ?`),
    listOwnSessions: db.prepare(`select ${SESSION_COLUMNS} from sessions where owner = ? order by updated_at desc, created_at desc limit ?`),
    deleteSession: db.prepare('delete from sessions where id = ?'),
    nextPosition: db.prepare('select coalesce(max(position) + 1, 0) as position from messages where session_id = ?'),
    insertMessage: db.prepare('insert into messages (session_id, position, message, after_seq, created_at) values (?, ?, ?, ?, ?)'),
    touchSession: db.prepare('update sessions set updated_at = ?, title = coalesce(title, ?) where id = ?'),
    listMessages: db.prepare('select message, after_seq from messages where session_id = ? order by position'),
    insertRun: db.prepare("insert into runs (id, session_id, strategy, max_steps, status, after_seq, started_at) values (?, ?, ?, ?, 'running', ?, ?)"),
    finishRun: db.prepare(
      `update runs set status = ?, end_reason = ?, steps = ?, ended_at = ?, checkpoint = null,
         prompt_tokens = min(prompt_tokens + ?, ${Number.MAX_SAFE_INTEGER}),
         completion_tokens = min(completion_tokens + ?, ${Number.MAX_SAFE_INTEGER}),
         spending = coalesce(?, spending)
       where id = ? returning session_id`,
    ),
    saveCheckpoint: db.prepare('update runs set checkpoint = ? where id = ?'),
    appendJournal: db.prepare('insert or replace into run_journal (run_id, position, kind, key, value, step) values (?, ?, ?, ?, ?, ?)'),
    readJournal: db.prepare('select position, kind, key, value, step from run_journal where run_id = ? order by position'),
    insertSnapshot: db.prepare(
      'insert into snapshots (id, session_id, label, kind, run_id, step, at_seq, messages, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    getSnapshot: db.prepare('select id, session_id, label, kind, run_id, step, at_seq, messages, created_at from snapshots where id = ?'),
    listSnapshots: db.prepare(
      'select id, session_id, label, kind, run_id, step, at_seq, created_at from snapshots where session_id = ? order by created_at, id',
    ),
    deleteMessages: db.prepare('delete from messages where session_id = ?'),
    truncateJournal: db.prepare('delete from run_journal where run_id = ? and position >= ?'),
    getRun: db.prepare(`select ${RUN_COLUMNS} from runs where id = ?`),
    listRuns: db.prepare(`select ${RUN_COLUMNS} from runs where session_id = ? order by started_at, id`),
    listRunningRuns: db.prepare(`select ${RUN_COLUMNS} from runs where status = 'running' order by started_at`),
    insertEvent: db.prepare('insert into events (session_id, seq, run_id, payload) values (?, ?, ?, ?)'),
    // A negative limit is SQLite's "no limit".
    listEvents: db.prepare('select payload from events where session_id = ? and seq > ? order by seq limit ?'),
    lastSeq: db.prepare('select coalesce(max(seq), 0) as seq from events where session_id = ?'),
  };
}

/**
 * The Store on SQLite (the embedded default), over libsql's synchronous API: every write is one
 * prepared statement, or one transaction, that has committed when its promise resolves, so an
 * event is on disk before anyone is sent it. Events and journal entries of many sessions at once
 * are committed together (see groupCommit).
 *
 * It is a store of its own rather than SqlStore under a dialect layer: the two stores want
 * different SQL (PostgreSQL writes a batch of messages in one `json_array_elements` statement and
 * group-commits events from many callers into one insert, because each round trip is costly;
 * SQLite commits in microseconds, in process, so plain statements in a transaction are simpler
 * and faster), and a query layer wide enough for both would hide exactly the parts each is good
 * at. Two small stores held to one contract suite read better than one store full of branches.
 */
export class SqliteStore implements Store {
  private readonly statements: ReturnType<typeof prepareStatements>;
  private clock = 0;
  /** A write has committed in this turn of the event loop: the next ones wait for the group commit. */
  private turnHasCommitted = false;
  private readonly pendingWrites: PendingWrite[] = [];

  /** Takes a connection already migrated (see openSqliteStore); the store closes it. */
  constructor(
    private readonly db: SqliteConnection,
    /** Names the database for logs. */
    readonly description: string,
  ) {
    this.statements = prepareStatements(db);
  }

  async createSession(id: string, owner: SessionOwner = { id: LOCAL_OWNER }): Promise<SessionRecord> {
    const now = this.now();
    return toSession(this.statements.insertSession.get([id, now, now, owner.id, owner.name ?? null]) as SessionRow);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.statements.getSession.get([id]) as SessionRow | undefined;
    return row && toSession(row);
  }

  async renameSession(id: string, title: string): Promise<SessionRecord | undefined> {
    const row = this.statements.renameSession.get([title, id]) as SessionRow | undefined;
    return row && toSession(row);
  }

  async listSessions(limit: number, owner?: string): Promise<SessionRecord[]> {
    const rows = owner === undefined ? this.statements.listSessions.all([limit]) : this.statements.listOwnSessions.all([owner, limit]);
    return (rows as SessionRow[]).map(toSession);
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.statements.deleteSession.run([id]).changes > 0;
  }

  async appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void> {
    if (messages.length === 0) return;
    const firstUser = messages.find((message) => message.role === 'user');
    const title = firstUser ? titleFrom(firstUser.content) : null;
    const now = this.now();
    this.db
      .transaction(() => {
        let { position } = this.statements.nextPosition.get([sessionId]) as { position: number };
        for (const message of messages) this.statements.insertMessage.run([sessionId, position++, JSON.stringify(message), afterSeq, now]);
        this.statements.touchSession.run([now, title, sessionId]);
      })
      .immediate();
  }

  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    const rows = this.statements.listMessages.all([sessionId]) as { message: string; after_seq: number }[];
    return rows.map((row) => ({ message: JSON.parse(row.message) as LlmMessage, afterSeq: row.after_seq }));
  }

  async createRun(run: NewRun): Promise<void> {
    this.statements.insertRun.run([run.id, run.sessionId, run.strategy, run.maxSteps, run.afterSeq ?? null, this.now()]);
  }

  async finishRun(runId: string, end: RunEnd): Promise<void> {
    const now = this.now();
    this.db
      .transaction(() => {
        const finished = this.statements.finishRun.get([
          end.status,
          end.endReason ?? null,
          end.steps ?? null,
          now,
          tokenCount(end.usage?.promptTokens),
          tokenCount(end.usage?.completionTokens),
          end.spending ? JSON.stringify(end.spending) : null,
          runId,
        ]) as { session_id: string } | undefined;
        if (finished) this.statements.touchSession.run([now, null, finished.session_id]);
      })
      .immediate();
  }

  async saveCheckpoint(runId: string, checkpoint: unknown): Promise<void> {
    this.statements.saveCheckpoint.run([checkpoint === null ? null : JSON.stringify(checkpoint), runId]);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const row = this.statements.getRun.get([runId]) as RunRow | undefined;
    return row && toRun(row);
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    return (this.statements.listRuns.all([sessionId]) as RunRow[]).map(toRun);
  }

  async listRunningRuns(): Promise<RunRecord[]> {
    return (this.statements.listRunningRuns.all([]) as RunRow[]).map(toRun);
  }

  async appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    const payload = JSON.stringify(event);
    return this.groupCommit(() => this.statements.insertEvent.run([sessionId, event.seq, event.run_id ?? null, payload]));
  }

  async listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]> {
    const rows = this.statements.listEvents.all([sessionId, afterSeq, limit ?? -1]) as { payload: string }[];
    return rows.map((row) => JSON.parse(row.payload) as LoggedEvent);
  }

  async lastSeq(sessionId: string): Promise<number> {
    return (this.statements.lastSeq.get([sessionId]) as { seq: number }).seq;
  }

  async appendJournal(runId: string, entry: JournalEntry): Promise<void> {
    const value = JSON.stringify(entry.value ?? null);
    return this.groupCommit(() => this.statements.appendJournal.run([runId, entry.position, entry.kind, entry.key, value, entry.step ?? 0]));
  }

  async readJournal(runId: string): Promise<JournalEntry[]> {
    const rows = this.statements.readJournal.all([runId]) as { position: number; kind: string; key: string; value: string; step: number }[];
    return rows.map((row) => ({ position: row.position, kind: row.kind, key: row.key, value: JSON.parse(row.value) as unknown, step: row.step }));
  }

  async truncateJournal(runId: string, fromPosition: number): Promise<void> {
    this.statements.truncateJournal.run([runId, fromPosition]);
  }

  async saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>): Promise<SnapshotRecord> {
    const createdAt = this.now();
    this.commitPending();
    this.statements.insertSnapshot.run([
      snapshot.id,
      snapshot.sessionId,
      snapshot.label,
      snapshot.kind,
      snapshot.runId ?? null,
      snapshot.step ?? null,
      snapshot.atSeq,
      JSON.stringify(toSnapshotColumn(snapshot)),
      createdAt,
    ]);
    return { ...snapshot, createdAt };
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    const row = this.statements.getSnapshot.get([id]) as (SnapshotRow & { messages: string }) | undefined;
    return row && { ...toSnapshot(row), ...fromSnapshotColumn(JSON.parse(row.messages)) };
  }

  async listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]> {
    return (this.statements.listSnapshots.all([sessionId]) as SnapshotRow[]).map(toSnapshot);
  }

  async replaceMessages(sessionId: string, messages: MessageRecord[]): Promise<void> {
    const now = this.now();
    this.commitPending();
    this.db
      .transaction(() => {
        this.statements.deleteMessages.run([sessionId]);
        for (const [position, record] of messages.entries()) {
          this.statements.insertMessage.run([sessionId, position, JSON.stringify(record.message), record.afterSeq, now]);
        }
      })
      .immediate();
  }

  async close(): Promise<void> {
    this.commitPending();
    closeSqliteDatabase(this.db);
  }

  /**
   * Group commit for the writes every model call makes (its events, its journal entries). The
   * first write in a turn of the event loop commits at once, as any other write does; those that
   * come later in the same turn (other sessions': one session waits for each of its writes before
   * the next) commit together in one transaction at the end of the turn. N sessions whose replies
   * arrive together then cost two commits a turn rather than N, which matters with DB_SYNC=full,
   * where every commit is an fsync that holds the event loop. Each caller resumes once its own
   * write has committed.
   */
  private groupCommit(write: () => void): Promise<void> {
    if (this.turnHasCommitted) {
      return new Promise((resolve, reject) => this.pendingWrites.push({ write, resolve, reject }));
    }
    this.turnHasCommitted = true;
    setImmediate(this.endTurn);
    write();
    return Promise.resolve();
  }

  private readonly endTurn = (): void => {
    this.commitPending();
    this.turnHasCommitted = false;
  };

  /** Commits the waiting writes in one transaction; if that fails, each alone, so one bad row fails only its own caller. */
  private commitPending(): void {
    const batch = this.pendingWrites.splice(0);
    if (batch.length === 0) return;
    try {
      if (batch.length === 1) batch[0]!.write();
      else
        this.db
          .transaction(() => {
            for (const item of batch) item.write();
          })
          .immediate();
    } catch {
      for (const item of batch) {
        try {
          item.write();
          item.resolve();
        } catch (error) {
          item.reject(error);
        }
      }
      return;
    }
    for (const item of batch) item.resolve();
  }

  /** Strictly increasing times, so "newest first" is well defined even within one millisecond. */
  private now(): string {
    this.clock = Math.max(this.clock + 1, Date.now());
    return new Date(this.clock).toISOString();
  }
}

function toSession(row: SessionRow): SessionRecord {
  return { id: row.id, title: row.title, createdAt: row.created_at, updatedAt: row.updated_at, owner: row.owner, ownerName: row.owner_name };
}

interface SnapshotRow {
  id: string;
  session_id: string;
  label: string;
  kind: SnapshotRecord['kind'];
  run_id: string | null;
  step: number | null;
  at_seq: number;
  created_at: string;
}

function toSnapshot(row: SnapshotRow): Omit<SnapshotRecord, 'messages'> {
  return {
    id: row.id,
    sessionId: row.session_id,
    label: row.label,
    kind: row.kind,
    ...(row.run_id === null ? {} : { runId: row.run_id }),
    ...(row.step === null ? {} : { step: row.step }),
    atSeq: row.at_seq,
    createdAt: row.created_at,
  };
}

function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    strategy: row.strategy,
    maxSteps: row.max_steps,
    status: row.status,
    endReason: row.end_reason ?? undefined,
    steps: row.steps ?? undefined,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    afterSeq: row.after_seq ?? undefined,
    startedAt: row.started_at,
    endedAt: row.ended_at ?? undefined,
    checkpoint: row.checkpoint === null ? undefined : JSON.parse(row.checkpoint),
    spending: row.spending ? (JSON.parse(row.spending) as RunRecord['spending']) : undefined,
  };
}
