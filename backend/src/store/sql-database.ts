/** Runs SQL; the one surface both PostgreSQL adapters (embedded and server) offer the store. */
export interface SqlExecutor {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/** A PostgreSQL database: a server at DATABASE_URL, or an old PGlite folder under DATA_DIR being migrated. */
export interface SqlDatabase extends SqlExecutor {
  /** Runs several statements separated by semicolons (migrations). */
  exec(sql: string): Promise<void>;
  /** Runs `work` in one transaction: all of it commits, or none. */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Names the database for logs, without secrets. */
  readonly description: string;
}
