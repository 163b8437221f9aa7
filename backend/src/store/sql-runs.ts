import { type Kysely, sql } from 'kysely';
import { type JsonReader, json, type Tables, tokenCount, toRun } from './sql-tables.ts';
import type { NewRun, RunEnd, RunRecord } from './store.ts';

/** The runs' records on either database (see SqlStore): started, parked, finished, listed. */
export class SqlRuns {
  constructor(
    private readonly db: Kysely<Tables>,
    /** The dialect's two-argument minimum (`min` on SQLite, `least` on PostgreSQL). */
    private readonly least: string,
    private readonly parsed: JsonReader,
  ) {}

  async createRun(run: NewRun, startedAt: string): Promise<void> {
    await this.db
      .insertInto('runs')
      .values({
        id: run.id,
        session_id: run.sessionId,
        strategy: run.strategy,
        max_steps: run.maxSteps,
        status: 'running',
        after_seq: run.afterSeq ?? null,
        started_at: startedAt,
      })
      .execute();
  }

  async finishRun(runId: string, end: RunEnd, now: string): Promise<void> {
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

  async lastRun(sessionId: string): Promise<RunRecord | undefined> {
    const row = await this.db
      .selectFrom('runs')
      .selectAll()
      .where('session_id', '=', sessionId)
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && toRun(row, this.parsed);
  }

  async listRunningRuns(): Promise<RunRecord[]> {
    const rows = await this.db.selectFrom('runs').selectAll().where('status', '=', 'running').orderBy('started_at').execute();
    return rows.map((row) => toRun(row, this.parsed));
  }
}
