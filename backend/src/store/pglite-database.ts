import { mkdirSync } from 'node:fs';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { SqlDatabase, SqlExecutor } from './sql-database.ts';

/** Embedded PostgreSQL (WASM), its files under a folder of DATA_DIR. */
export class PgliteDatabase implements SqlDatabase {
  private constructor(
    private readonly db: PGlite,
    readonly description: string,
  ) {}

  /** Opens (or creates) the database in `dir`. */
  static async open(dir: string): Promise<PgliteDatabase> {
    mkdirSync(dir, { recursive: true });
    try {
      return new PgliteDatabase(await PGlite.create(dir), `embedded PostgreSQL in ${dir}`);
    } catch (error) {
      throw new Error(
        `The embedded database in ${dir} could not be opened (${(error as Error).message}). ` +
          'If it was damaged, restore it from a backup or move the folder aside to start afresh.',
        { cause: error },
      );
    }
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
      work({
        query: async <R>(sql: string, params: unknown[] = []) => (await tx.query<R>(sql, params)).rows,
        exec: async (sql: string) => void (await tx.exec(sql)),
      }),
    );
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
