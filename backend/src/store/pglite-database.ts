import { mkdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { SqlDatabase, SqlExecutor } from './sql-database.ts';

/** PGlite's own start parameters, plus no WAL segment recycling (see `open`). */
const START_PARAMS = [
  '--single', '-F', '-O', '-j',
  '-c', 'search_path=public',
  '-c', 'exit_on_error=false',
  '-c', 'log_checkpoints=false',
  '-c', 'max_worker_processes=0',
  '-c', 'max_parallel_workers=0',
  '-c', 'max_parallel_workers_per_gather=0',
  '-c', 'io_method=sync',
  '-c', 'max_parallel_maintenance_workers=0',
  '-c', 'wal_recycle=off',
];

/** Embedded PostgreSQL (WASM), its files under a folder of DATA_DIR. */
export class PgliteDatabase implements SqlDatabase {
  private constructor(
    private readonly db: PGlite,
    readonly description: string,
  ) {}

  /**
   * Opens (or creates) the database in `dir`. WAL segments are created afresh rather than
   * recycled by renaming, because PGlite's file system cannot rename atomically and a kill in
   * the middle of a recycle could lose a segment.
   */
  static async open(dir: string): Promise<PgliteDatabase> {
    mkdirSync(dir, { recursive: true });
    const db = await PGlite.create(dir, { startParams: START_PARAMS });
    return new PgliteDatabase(db, `embedded PostgreSQL in ${dir}`);
  }

  /** An in-memory instance, for tests. */
  static async inMemory(): Promise<PgliteDatabase> {
    return new PgliteDatabase(await PGlite.create(), 'embedded PostgreSQL in memory');
  }

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.db.query<T>(sql, params)).rows;
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.db.transaction((tx: Transaction) =>
      work({ query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows }),
    );
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
