import type pg from 'pg';
import { optionalPackage } from '../util/optional-package.ts';
import type { SqlDatabase, SqlExecutor } from './sql-database.ts';

/** A PostgreSQL server at DATABASE_URL, through a connection pool. */
export class PostgresDatabase implements SqlDatabase {
  readonly description: string;
  /** The pool itself, for the store's query builder (which ends it when the store closes). */
  readonly pool: pg.Pool;

  constructor(url: string) {
    this.pool = new (optionalPackage<typeof pg>('pg').Pool)({ connectionString: url, max: 10 });
    // An idle client that loses its server must not take the process down.
    this.pool.on('error', () => undefined);
    const parsed = new URL(url);
    this.description = `PostgreSQL at ${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  }

  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const result = await work({
        query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as R[],
        // Without parameters node-postgres sends the simple query protocol, which takes a whole script.
        exec: async (sql: string) => void (await client.query(sql)),
      });
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
