import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../llm/llm-client.ts';
import type { SqlDatabase } from './sql-database.ts';
import { type MessageRecord, type RunEnd, type RunRecord, type SessionRecord, type Store, titleFrom } from './store.ts';

interface SessionRow {
  id: string;
  title: string | null;
  created_at: Date | string;
  updated_at: Date | string;
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
  started_at: Date | string;
  ended_at: Date | string | null;
  checkpoint: unknown;
}

const iso = (value: Date | string) => new Date(value).toISOString();
const json = (value: unknown) => JSON.stringify(value);
/** json columns come back parsed from both drivers; tolerate text too. */
const parsed = <T>(value: unknown): T => (typeof value === 'string' ? (JSON.parse(value) as T) : (value as T));

/** The Store on PostgreSQL: the same SQL for the embedded database and for a server. */
export class SqlStore implements Store {
  constructor(private readonly db: SqlDatabase) {}

  async createSession(id: string): Promise<SessionRecord> {
    const [row] = await this.db.query<SessionRow>('insert into sessions (id) values ($1) returning *', [id]);
    return toSession(row!);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const [row] = await this.db.query<SessionRow>('select * from sessions where id = $1', [id]);
    return row && toSession(row);
  }

  async listSessions(limit: number): Promise<SessionRecord[]> {
    const rows = await this.db.query<SessionRow>('select * from sessions order by updated_at desc, created_at desc limit $1', [limit]);
    return rows.map(toSession);
  }

  async deleteSession(id: string): Promise<boolean> {
    const rows = await this.db.query('delete from sessions where id = $1 returning id', [id]);
    return rows.length > 0;
  }

  async appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void> {
    if (messages.length === 0) return;
    await this.db.transaction(async (tx) => {
      const [{ next } = { next: 0 }] = await tx.query<{ next: number }>(
        'select coalesce(max(position) + 1, 0)::int as next from messages where session_id = $1',
        [sessionId],
      );
      for (const [index, message] of messages.entries()) {
        await tx.query('insert into messages (session_id, position, message, after_seq) values ($1, $2, $3, $4)', [
          sessionId,
          next + index,
          json(message),
          afterSeq,
        ]);
      }
      const firstUser = messages.find((message) => message.role === 'user');
      await tx.query(
        'update sessions set updated_at = now(), title = coalesce(title, $2) where id = $1',
        [sessionId, firstUser ? titleFrom(firstUser.content) : null],
      );
    });
  }

  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    const rows = await this.db.query<{ message: unknown; after_seq: number }>(
      'select message, after_seq from messages where session_id = $1 order by position',
      [sessionId],
    );
    return rows.map((row) => ({ message: parsed<LlmMessage>(row.message), afterSeq: row.after_seq }));
  }

  async createRun(run: Pick<RunRecord, 'id' | 'sessionId' | 'strategy' | 'maxSteps'>): Promise<void> {
    await this.db.query("insert into runs (id, session_id, strategy, max_steps, status) values ($1, $2, $3, $4, 'running')", [
      run.id,
      run.sessionId,
      run.strategy,
      run.maxSteps,
    ]);
  }

  async finishRun(runId: string, end: RunEnd): Promise<void> {
    await this.db.query(
      `update runs set status = $2, end_reason = $3, steps = $4, ended_at = now(), checkpoint = null,
         prompt_tokens = prompt_tokens + $5, completion_tokens = completion_tokens + $6
       where id = $1`,
      [runId, end.status, end.endReason ?? null, end.steps ?? null, end.usage?.promptTokens ?? 0, end.usage?.completionTokens ?? 0],
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

  async appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    // One statement: the event and the session's last activity commit together.
    await this.db.query(
      `with inserted as (insert into events (session_id, seq, run_id, payload) values ($1, $2, $3, $4))
       update sessions set updated_at = now() where id = $1`,
      [sessionId, event.seq, event.run_id ?? null, json(event)],
    );
  }

  async listEvents(sessionId: string, afterSeq: number): Promise<LoggedEvent[]> {
    const rows = await this.db.query<{ payload: unknown }>(
      'select payload from events where session_id = $1 and seq > $2 order by seq',
      [sessionId, afterSeq],
    );
    return rows.map((row) => parsed<LoggedEvent>(row.payload));
  }

  async lastSeq(sessionId: string): Promise<number> {
    const [row] = await this.db.query<{ seq: number }>('select coalesce(max(seq), 0)::int as seq from events where session_id = $1', [
      sessionId,
    ]);
    return row?.seq ?? 0;
  }

  close(): Promise<void> {
    return this.db.close();
  }
}

function toSession(row: SessionRow): SessionRecord {
  return { id: row.id, title: row.title, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at) };
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
    startedAt: iso(row.started_at),
    endedAt: row.ended_at ? iso(row.ended_at) : undefined,
    checkpoint: row.checkpoint === null ? undefined : parsed(row.checkpoint),
  };
}
