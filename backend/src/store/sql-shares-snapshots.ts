import type { Kysely } from 'kysely';
import type { SqlDialectName } from './migrations.ts';
import { fromSnapshotColumn, toSnapshotColumn } from './snapshot-column.ts';
import { type JsonReader, json, type Tables, toShare, toSnapshot } from './sql-tables.ts';
import type { ShareRecord, SnapshotRecord } from './store.ts';

/** Share and snapshot ids are UUIDs: anything else names nothing, without asking the database. */
const RECORD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A chat's read-only links and its snapshots, on either database (see SqlStore). */
export class SqlSharesAndSnapshots {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: SqlDialectName,
    private readonly parsed: JsonReader,
  ) {}

  async createShare(share: Omit<ShareRecord, 'createdAt'>, createdAt: string): Promise<ShareRecord> {
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
    if (!RECORD_ID.test(id)) return false;
    const { numDeletedRows } = await this.db.deleteFrom('chat_shares').where('session_id', '=', sessionId).where('id', '=', id).executeTakeFirst();
    return numDeletedRows > 0n;
  }

  async saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>, createdAt: string): Promise<SnapshotRecord> {
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
    if (!RECORD_ID.test(id)) return undefined;
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
}
