/** Runs SQL; the one surface both PostgreSQL adapters (embedded and server) offer the store. */
export interface SqlExecutor {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements as the server parses it (a `;` inside a function body or a string is not a split). */
  exec(sql: string): Promise<void>;
}

/** A PostgreSQL database: a server at DATABASE_URL, or an old PGlite folder under DATA_DIR being migrated. */
export interface SqlDatabase extends SqlExecutor {
  /** Runs `work` in one transaction: all of it commits, or none. */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Names the database for logs, without secrets. */
  readonly description: string;
}
