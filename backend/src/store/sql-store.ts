import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../messages.ts';
import type { SqlDatabase } from './sql-database.ts';
import {
  type JournalEntry,
  type MessageRecord,
  type SnapshotRecord,
  type NewRun,
  type RunEnd,
  type RunRecord,
  type SessionRecord,
  type Fence,
  StaleLeaseError,
  type SessionOwner,
  type Store,
  LOCAL_OWNER,
  titleFrom,
} from './store.ts';
import { fromSnapshotColumn, toSnapshotColumn } from './snapshot-column.ts';

interface SessionRow {
  id: string;
  title: string | null;
  created_at: Date | string;
  updated_at: Date | string;
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
  /** bigint: node-postgres reads it as a string, PGlite as a number (or a bigint past 2^53). */
  prompt_tokens: number | string | bigint;
  completion_tokens: number | string | bigint;
  after_seq: number | null;
  started_at: Date | string;
  ended_at: Date | string | null;
  checkpoint: unknown;
  spending: unknown;
}

/** Most rows written in one statement (at most 5 parameters each, well under PostgreSQL's 65535). */
const BATCH_LIMIT = 1_000;

/**
 * Group commit: rows that arrive while a write is in progress are written together in the next
 * statement, and each caller resumes once its own row is committed. One session's writes come one
 * at a time (it waits for each), so this only ever merges different sessions'.
 */
class GroupWriter<T> {
  private readonly pending: { row: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private writing = false;

  /** `insert` writes the rows it may, and returns the errors of those it refused (by index), if any. */
  constructor(private readonly insert: (rows: T[]) => Promise<Map<number, Error> | undefined>) {}

  add(row: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, BATCH_LIMIT);
      const settle = (item: (typeof batch)[number], refused: Error | undefined) => (refused ? item.reject(refused) : item.resolve());
      try {
        const refused = await this.insert(batch.map((item) => item.row));
        for (const [index, item] of batch.entries()) settle(item, refused?.get(index));
      } catch (error) {
        // One bad row (a seq already taken) must fail only its own caller: retry one by one.
        if (batch.length === 1) batch[0]!.reject(error);
        else for (const item of batch) await this.insert([item.row]).then((refused) => settle(item, refused?.get(0)), item.reject);
      }
    }
    this.writing = false;
  }
}

/**
 * A fenced row is written only while its lease (session, instance, generation) is the session's;
 * a row without one (no lease held: a file saved between runs) is written as before.
 */
const FENCED = `(v.instance_id is null or exists (
  select 1 from session_leases l where l.session_id = v.session_id::text and l.instance_id = v.instance_id and l.generation = v.generation for share))`;

/** `($1::uuid, $2::integer), …`: VALUES whose columns have types (a VALUES list read by a select has none of its own). */
const typedValues = (rows: number, types: string[]) =>
  Array.from({ length: rows }, (_, row) => `(${types.map((type, column) => `$${row * types.length + column + 1}::${type}`).join(', ')})`).join(', ');

/** The rows `missing` says were not written, each refused with StaleLeaseError. */
function refusals<T>(rows: T[], missing: (row: T) => boolean, sessionOf: (row: T, index: number) => string): Map<number, Error> | undefined {
  const refused = new Map<number, Error>();
  for (const [index, row] of rows.entries()) if (missing(row)) refused.set(index, new StaleLeaseError(sessionOf(row, index)));
  return refused.size > 0 ? refused : undefined;
}

/** `($1, $2), ($3, $4)`: the VALUES of `rows` rows of `width` parameters. */
const valuesList = (rows: number, width: number) =>
  Array.from({ length: rows }, (_, row) => `(${Array.from({ length: width }, (_, column) => `$${row * width + column + 1}`).join(', ')})`).join(', ');

const iso = (value: Date | string) => new Date(value).toISOString();
const json = (value: unknown) => JSON.stringify(value);
/**
 * A token count to add to a run's total: a whole number from 0 to Number.MAX_SAFE_INTEGER, so that
 * totals (capped there too) read back as exact numbers.
 */
const tokenCount = (value: number | undefined) =>
  value !== undefined && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER) : 0;
/** json columns come back parsed from both drivers; tolerate text too. */
const parsed = <T>(value: unknown): T => (typeof value === 'string' ? (JSON.parse(value) as T) : (value as T));

/** The Store on PostgreSQL (a server at DATABASE_URL; PGlite only to read data from before the SQLite store). */
export class SqlStore implements Store {
  private fence: Fence | undefined;

  constructor(private readonly db: SqlDatabase) {}

  /**
   * Several instances: from now on a run's events and journal entries are written only while the
   * lease they are made under is still the session's (see Fence); a stale instance's are refused.
   */
  fenceWith(fence: Fence): void {
    this.fence = fence;
  }

  async createSession(id: string, owner: SessionOwner = { id: LOCAL_OWNER }): Promise<SessionRecord> {
    const [row] = await this.db.query<SessionRow>('insert into sessions (id, owner, owner_name) values ($1, $2, $3) returning *', [
      id,
      owner.id,
      owner.name ?? null,
    ]);
    return toSession(row!);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const [row] = await this.db.query<SessionRow>('select * from sessions where id = $1', [id]);
    return row && toSession(row);
  }

  async renameSession(id: string, title: string): Promise<SessionRecord | undefined> {
    const [row] = await this.db.query<SessionRow>('update sessions set title = $2 where id = $1 returning *', [id, title]);
    return row && toSession(row);
  }

  async listSessions(limit: number, owner?: string): Promise<SessionRecord[]> {
    const rows =
      owner === undefined
        ? await this.db.query<SessionRow>('select * from sessions order by updated_at desc, created_at desc limit $1', [limit])
        : await this.db.query<SessionRow>('select * from sessions where owner = $2 order by updated_at desc, created_at desc limit $1', [limit, owner]);
    return rows.map(toSession);
  }

  async deleteSession(id: string): Promise<boolean> {
    const rows = await this.db.query('delete from sessions where id = $1 returning id', [id]);
    return rows.length > 0;
  }

  async appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void> {
    if (messages.length === 0) return;
    const firstUser = messages.find((message) => message.role === 'user');
    // One statement (so one commit): the messages after the last one, and the session's activity and title.
    await this.db.query(
      `with next as (select coalesce(max(position) + 1, 0) as position from messages where session_id = $1),
       inserted as (
         insert into messages (session_id, position, message, after_seq)
         select $1, next.position + item.ordinality - 1, item.value, $3
         from next, json_array_elements($2::json) with ordinality as item(value, ordinality))
       update sessions set updated_at = now(), title = coalesce(title, $4) where id = $1`,
      [sessionId, json(messages), afterSeq, firstUser ? titleFrom(firstUser.content) : null],
    );
  }

  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    const rows = await this.db.query<{ message: unknown; after_seq: number }>(
      'select message, after_seq from messages where session_id = $1 order by position',
      [sessionId],
    );
    return rows.map((row) => ({ message: parsed<LlmMessage>(row.message), afterSeq: row.after_seq }));
  }

  async createRun(run: NewRun): Promise<void> {
    await this.db.query("insert into runs (id, session_id, strategy, max_steps, status, after_seq) values ($1, $2, $3, $4, 'running', $5)", [
      run.id,
      run.sessionId,
      run.strategy,
      run.maxSteps,
      run.afterSeq ?? null,
    ]);
  }

  async finishRun(runId: string, end: RunEnd): Promise<void> {
    await this.db.query(
      `with finished as (
         update runs set status = $2, end_reason = $3, steps = $4, ended_at = now(), checkpoint = null,
           prompt_tokens = least(prompt_tokens + $5::bigint, $7::bigint),
           completion_tokens = least(completion_tokens + $6::bigint, $7::bigint),
           spending = coalesce($8::jsonb, spending)
         where id = $1 returning session_id)
       update sessions set updated_at = now() where id = (select session_id from finished)`,
      [
        runId,
        end.status,
        end.endReason ?? null,
        end.steps ?? null,
        tokenCount(end.usage?.promptTokens),
        tokenCount(end.usage?.completionTokens),
        Number.MAX_SAFE_INTEGER,
        end.spending ? JSON.stringify(end.spending) : null,
      ],
    );
  }

  async saveCheckpoint(runId: string, checkpoint: unknown): Promise<void> {
    await this.db.query('update runs set checkpoint = $2 where id = $1', [runId, checkpoint === null ? null : json(checkpoint)]);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const [row] = await this.db.query<RunRow>('select * from runs where id = $1', [runId]);
    return row && toRun(row);
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    const rows = await this.db.query<RunRow>('select * from runs where session_id = $1 order by started_at, id', [sessionId]);
    return rows.map(toRun);
  }

  async listRunningRuns(): Promise<RunRecord[]> {
    const rows = await this.db.query<RunRow>("select * from runs where status = 'running' order by started_at");
    return rows.map(toRun);
  }

  /** Events of many sessions at once go in one statement (see GroupWriter). */
  appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    return this.events.add({ sessionId, event });
  }

  private readonly events = new GroupWriter<{ sessionId: string; event: LoggedEvent }>(async (rows) => {
    const tokens = rows.map(({ sessionId }) => this.fence?.forSession(sessionId));
    if (tokens.every((token) => token === undefined)) {
      const params = rows.flatMap(({ sessionId, event }) => [sessionId, event.seq, event.run_id ?? null, json(event)]);
      await this.db.query(`insert into events (session_id, seq, run_id, payload) values ${valuesList(rows.length, 4)}`, params);
      return undefined;
    }
    const params = rows.flatMap(({ sessionId, event }, index) => [
      sessionId,
      event.seq,
      event.run_id ?? null,
      json(event),
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const written = await this.db.query<{ session_id: string; seq: number }>(
      `insert into events (session_id, seq, run_id, payload)
       select v.session_id, v.seq, v.run_id, v.payload
       from (values ${typedValues(rows.length, ['uuid', 'integer', 'uuid', 'json', 'text', 'bigint'])}) as v (session_id, seq, run_id, payload, instance_id, generation)
       where ${FENCED}
       returning session_id, seq`,
      params,
    );
    const done = new Set(written.map((row) => `${row.session_id}:${row.seq}`));
    return refusals(
      rows,
      (row) => !done.has(`${row.sessionId}:${row.event.seq}`),
      (row) => row.sessionId,
    );
  });

  async listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]> {
    const rows = await this.db.query<{ payload: unknown }>(
      `select payload from events where session_id = $1 and seq > $2 order by seq${limit === undefined ? '' : ' limit $3'}`,
      limit === undefined ? [sessionId, afterSeq] : [sessionId, afterSeq, limit],
    );
    return rows.map((row) => parsed<LoggedEvent>(row.payload));
  }

  /** Journal entries of many runs at once go in one statement (see GroupWriter). */
  appendJournal(runId: string, entry: JournalEntry): Promise<void> {
    return this.journal.add({ runId, entry });
  }

  private readonly journal = new GroupWriter<{ runId: string; entry: JournalEntry }>(async (rows) => {
    const tokens = rows.map(({ runId }) => this.fence?.forRun(runId));
    if (tokens.every((token) => token === undefined)) {
      const params = rows.flatMap(({ runId, entry }) => [runId, entry.position, entry.kind, entry.key, json(entry.value ?? null), entry.step ?? 0]);
      // Two rows for one position in one statement would fail it; GroupWriter then writes them one by one, in order.
      await this.db.query(
        `insert into run_journal (run_id, position, kind, key, value, step) values ${valuesList(rows.length, 6)}
         on conflict (run_id, position) do update set kind = excluded.kind, key = excluded.key, value = excluded.value, step = excluded.step`,
        params,
      );
      return undefined;
    }
    const params = rows.flatMap(({ runId, entry }, index) => [
      runId,
      entry.position,
      entry.kind,
      entry.key,
      json(entry.value ?? null),
      entry.step ?? 0,
      tokens[index]?.sessionId ?? null,
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const written = await this.db.query<{ run_id: string; position: number }>(
      `insert into run_journal (run_id, position, kind, key, value, step)
       select v.run_id, v.position, v.kind, v.key, v.value, v.step
       from (values ${typedValues(rows.length, ['uuid', 'integer', 'text', 'text', 'json', 'integer', 'text', 'text', 'bigint'])})
         as v (run_id, position, kind, key, value, step, session_id, instance_id, generation)
       where ${FENCED}
       on conflict (run_id, position) do update set kind = excluded.kind, key = excluded.key, value = excluded.value, step = excluded.step
       returning run_id, position`,
      params,
    );
    const done = new Set(written.map((row) => `${row.run_id}:${row.position}`));
    return refusals(
      rows,
      (row) => !done.has(`${row.runId}:${row.entry.position}`),
      (_row, index) => tokens[index]!.sessionId,
    );
  });

  async readJournal(runId: string): Promise<JournalEntry[]> {
    const rows = await this.db.query<{ position: number; kind: string; key: string; value: unknown; step: number }>(
      'select position, kind, key, value, step from run_journal where run_id = $1 order by position',
      [runId],
    );
    return rows.map((row) => ({ position: row.position, kind: row.kind, key: row.key, value: row.value, step: row.step }));
  }

  async truncateJournal(runId: string, fromPosition: number): Promise<void> {
    const token = this.fence?.forRun(runId);
    if (!token) {
      await this.db.query('delete from run_journal where run_id = $1 and position >= $2', [runId, fromPosition]);
      return;
    }
    const [lease] = await this.db.query(
      `with lease as (select 1 from session_leases l where l.session_id = $3 and l.instance_id = $4 and l.generation = $5 for share)
       , gone as (delete from run_journal where run_id = $1 and position >= $2 and exists (select 1 from lease))
       select exists (select 1 from lease) as held`,
      [runId, fromPosition, token.sessionId, token.instanceId, token.generation],
    );
    if (!(lease as { held: boolean } | undefined)?.held) throw new StaleLeaseError(token.sessionId);
  }

  async saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>): Promise<SnapshotRecord> {
    const [row] = await this.db.query<{ created_at: Date | string }>(
      `insert into snapshots (id, session_id, label, kind, run_id, step, at_seq, messages)
       values ($1, $2, $3, $4, $5, $6, $7, $8) returning created_at`,
      [
        snapshot.id,
        snapshot.sessionId,
        snapshot.label,
        snapshot.kind,
        snapshot.runId ?? null,
        snapshot.step ?? null,
        snapshot.atSeq,
        json(toSnapshotColumn(snapshot)),
      ],
    );
    return { ...snapshot, createdAt: new Date(row!.created_at).toISOString() };
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return undefined;
    const [row] = await this.db.query<SnapshotRow & { messages: unknown }>('select * from snapshots where id = $1', [id]);
    return row && { ...toSnapshot(row), ...fromSnapshotColumn(parsed<unknown>(row.messages)) };
  }

  async listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]> {
    const rows = await this.db.query<SnapshotRow>(
      'select id, session_id, label, kind, run_id, step, at_seq, created_at from snapshots where session_id = $1 order by created_at, id',
      [sessionId],
    );
    return rows.map(toSnapshot);
  }

  async replaceMessages(sessionId: string, messages: MessageRecord[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('delete from messages where session_id = $1', [sessionId]);
      for (const [position, record] of messages.entries()) {
        await tx.query('insert into messages (session_id, position, message, after_seq) values ($1, $2, $3, $4)', [
          sessionId,
          position,
          json(record.message),
          record.afterSeq,
        ]);
      }
    });
  }

  async lastSeq(sessionId: string): Promise<number> {
    const [row] = await this.db.query<{ seq: number }>('select coalesce(max(seq), 0)::int as seq from events where session_id = $1', [sessionId]);
    return row?.seq ?? 0;
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

function toSession(row: SessionRow): SessionRecord {
  return { id: row.id, title: row.title, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at), owner: row.owner, ownerName: row.owner_name };
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
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    afterSeq: row.after_seq ?? undefined,
    startedAt: iso(row.started_at),
    endedAt: row.ended_at ? iso(row.ended_at) : undefined,
    checkpoint: row.checkpoint === null ? undefined : parsed(row.checkpoint),
    spending: row.spending === null || row.spending === undefined ? undefined : (parsed(row.spending) as RunRecord['spending']),
  };
}

interface SnapshotRow {
  id: string;
  session_id: string;
  label: string;
  kind: SnapshotRecord['kind'];
  run_id: string | null;
  step: number | null;
  at_seq: number;
  created_at: Date | string;
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
    createdAt: new Date(row.created_at).toISOString(),
  };
}
