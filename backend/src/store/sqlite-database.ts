import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
} from 'kysely';
import Database from 'libsql';

/** An open SQLite connection (libsql's synchronous, better-sqlite3-style API). */
export type SqliteConnection = Database.Database;

/** How commits reach the disk: see `Config.dbSync`. */
export type SqliteSync = 'normal' | 'full';

/** The path that opens a private in-memory database. */
export const IN_MEMORY = ':memory:';

/** How long a write waits for another connection's lock (the migrate-data command, a backup tool) before it fails. */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens (or creates) the SQLite database at `path`, in WAL mode: a commit appends to the log, so
 * a process killed mid-write leaves the last committed state, which the next open recovers.
 */
export function openSqliteDatabase(path: string, sync: SqliteSync): SqliteConnection {
  if (path !== IN_MEMORY) mkdirSync(dirname(path), { recursive: true });
  let db: SqliteConnection;
  try {
    db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    throw new Error(`The database ${path} could not be opened (${(error as Error).message}).`, { cause: error });
  }
  try {
    if (path !== IN_MEMORY) {
      const mode = pragma(db, 'journal_mode = wal');
      if (String(mode).toLowerCase() !== 'wal') throw new Error(`it stays in journal mode "${String(mode)}", not WAL`);
    }
    pragma(db, `synchronous = ${sync}`);
    // The cascades (a session's messages, runs and events) need foreign keys, which SQLite leaves off by default.
    pragma(db, 'foreign_keys = on');
    return db;
  } catch (error) {
    db.close();
    throw new Error(
      `The database ${path} could not be opened (${(error as Error).message}). ` +
        'If it was damaged, restore it from a backup or move it aside to start afresh.',
      { cause: error },
    );
  }
}

/** Runs a pragma and returns its one value (libsql's `pragma(…, { simple })` also returns row metadata). */
export function pragma(db: SqliteConnection, source: string): unknown {
  const row = db.prepare(`pragma ${source}`).get([]) as Record<string, unknown> | undefined;
  if (!row) return undefined;
  const [name] = Object.keys(row).filter((key) => key !== '_metadata');
  return name === undefined ? undefined : row[name];
}

/** Folds the write-ahead log into the database file, so a cleanly closed database is one file. */
export function closeSqliteDatabase(db: SqliteConnection): void {
  if (!db.open) return;
  try {
    if (!db.memory) pragma(db, 'wal_checkpoint(truncate)');
  } finally {
    db.close();
  }
}

/** Most prepared statements kept per connection (a batch insert's text varies with its row count). */
const STATEMENT_CACHE_SIZE = 256;

/**
 * The connection as Kysely's SQLite dialect wants it, with each statement prepared once rather than
 * at every run (the dialect prepares per query; parsing the same SQL again costs more than running
 * it). Closing it is the owner's, through closeSqliteDatabase: Kysely's destroy leaves it open.
 */
export function sqliteForKysely(db: SqliteConnection): SqliteDatabase {
  const statements = new Map<string, ReturnType<SqliteConnection['prepare']>>();
  return {
    prepare(source: string) {
      let statement = statements.get(source);
      if (!statement) {
        statement = db.prepare(source);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(source, statement);
      }
      return statement as unknown as ReturnType<SqliteDatabase['prepare']>;
    },
    close() {},
  };
}

/** Kysely's SQLite adapter, which says (truly, for SQLite) that schema changes are transactional: each migration run commits whole. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * Transactions that take the write lock when they begin: a transaction that read first and wrote
 * after another connection's commit (the writer thread's) would fail instead of waiting its turn.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** Kysely's SQLite dialect over libsql's synchronous connection (better-sqlite3's API). */
export class LibsqlDialect extends SqliteDialect {
  private readonly database: SqliteDatabase;

  constructor(db: SqliteConnection) {
    const database = sqliteForKysely(db);
    super({ database });
    this.database = database;
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver({ database: this.database });
  }
}
