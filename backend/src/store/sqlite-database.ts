import { mkdirSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type DialectAdapter, type Kysely, SqliteAdapter, type SqliteDatabase, SqliteDialect, sql } from 'kysely';
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

/** Kysely's SQLite dialect over libsql's synchronous connection (better-sqlite3's API). */
export class LibsqlDialect extends SqliteDialect {
  constructor(db: SqliteConnection) {
    super({ database: sqliteForKysely(db) });
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/** How a group commit reaches the disk, when the store does not leave it to the database (see walSyncedOffThread). */
export interface GroupSync {
  /** Runs a group commit's `write` and resolves once what it wrote is on disk. */
  write<T, D>(db: Kysely<D>, write: (db: Kysely<D>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * DB_SYNC=full without holding up the process: SQLite would fsync the log inside each commit, on
 * the one thread that runs everything else. A group commit instead runs with synchronous=normal
 * (its frames written to the log, not yet synced), then the log file is synced on libuv's thread
 * pool while the process goes on, and its writers resume only after that. Every other write keeps
 * synchronous=full. The connection is held for the whole write, so nothing else runs under the
 * lighter setting.
 */
export function walSyncedOffThread(databasePath: string): GroupSync {
  let log: Promise<FileHandle> | undefined;
  return {
    async write(db, write) {
      const result = await db.connection().execute(async (connection) => {
        await sql`pragma synchronous = normal`.execute(connection);
        try {
          return await write(connection);
        } finally {
          await sql`pragma synchronous = full`.execute(connection);
        }
      });
      try {
        // The log exists once anything was written; it stays for as long as the database is open.
        log ??= open(`${databasePath}-wal`, 'r+').catch((error: unknown) => {
          log = undefined;
          throw error;
        });
        await (await log).datasync();
      } catch (error) {
        // Committed, but not known to be on disk: the group fails whole (its rows are not written again).
        throw Object.assign(new Error(`The database's log could not be synced to disk (${(error as Error).message})`, { cause: error }), { committed: true });
      }
      return result;
    },
    async close() {
      await (await log?.catch(() => undefined))?.close();
    },
  };
}
