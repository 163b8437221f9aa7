import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import { migrate } from './migrations.ts';
import type { PgliteImport } from './pglite-import.ts';
import { PostgresDatabase } from './postgres-database.ts';
import type { SqlDatabase } from './sql-database.ts';
import { SqlStore } from './sql-store.ts';
import { IN_MEMORY, openSqliteDatabase, type SqliteSync } from './sqlite-database.ts';
import { migrateSqlite } from './sqlite-migrations.ts';
import { SqliteStore } from './sqlite-store.ts';
import type { Store } from './store.ts';

/** The embedded database's file inside DATA_DIR. */
export const SQLITE_DATABASE_FILE = 'stepwise.db';
/** Where earlier releases kept their embedded PostgreSQL (PGlite) inside DATA_DIR: only read, to move its data over. */
export const EMBEDDED_DATABASE_FOLDER = 'db';

/** Opens the configured store (a PostgreSQL server when DATABASE_URL is set, else SQLite under DATA_DIR) and migrates it. */
export async function openStore(config: Config, logger: Logger): Promise<Store> {
  if (config.databaseUrl) return openSqlStore(new PostgresDatabase(config.databaseUrl), logger);
  return openEmbeddedStore(config.dataDir, { sync: config.dbSync, logger });
}

/** Opens the SQLite store of a data folder, first moving into it what an earlier release kept in PGlite. */
export async function openEmbeddedStore(dataDir: string, options: { sync?: SqliteSync; logger?: Logger } = {}): Promise<SqliteStore> {
  await migrateEmbeddedData(dataDir, options.logger);
  if (existsSync(join(dataDir, EMBEDDED_DATABASE_FOLDER))) {
    // Left when a start stopped between the two renames of an import, or put back by hand: it is not read.
    options.logger?.warn(
      { folder: join(dataDir, EMBEDDED_DATABASE_FOLDER) },
      `an old embedded PostgreSQL folder sits beside ${SQLITE_DATABASE_FILE} and is not read; move it aside once you have checked its data is in`,
    );
  }
  return openSqliteStore(join(dataDir, SQLITE_DATABASE_FILE), options);
}

/**
 * Moves an earlier release's PGlite data (DATA_DIR/db) into a new SQLite database, once: only when
 * that folder holds a database and DATA_DIR has no SQLite file yet. Undefined when there was nothing to move.
 */
export async function migrateEmbeddedData(dataDir: string, logger?: Logger): Promise<PgliteImport | undefined> {
  const folder = join(dataDir, EMBEDDED_DATABASE_FOLDER);
  const file = join(dataDir, SQLITE_DATABASE_FILE);
  if (existsSync(file) || !isPgliteDirectory(folder)) return undefined;
  // Loaded only here: a server that has nothing to move never loads PGlite.
  const { importPgliteData } = await import('./pglite-import.ts');
  return importPgliteData(folder, file, logger);
}

/** Whether `dir` holds a PGlite (PostgreSQL) data directory. */
export function isPgliteDirectory(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

/** Opens a SQLite database (a file, or ':memory:'), migrates it and wraps it in the store. */
export function openSqliteStore(path: string, options: { sync?: SqliteSync; logger?: Logger } = {}): SqliteStore {
  const sync = options.sync ?? 'full';
  const db = openSqliteDatabase(path, sync);
  try {
    const applied = migrateSqlite(db);
    const description = path === IN_MEMORY ? 'embedded SQLite in memory' : `embedded SQLite in ${path} (synchronous=${sync})`;
    options.logger?.info({ database: description, migrations: applied }, 'database ready');
    return new SqliteStore(db, description);
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Migrates a PostgreSQL database and wraps it in the store. */
export async function openSqlStore(db: SqlDatabase, logger?: Logger): Promise<SqlStore> {
  try {
    const applied = await migrate(db);
    logger?.info({ database: db.description, migrations: applied }, 'database ready');
    return new SqlStore(db);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}
