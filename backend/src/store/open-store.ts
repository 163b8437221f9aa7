import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import { Kysely, PostgresDialect } from 'kysely';
import { migrateSchema, SCHEMA, type SchemaStep } from './migrations.ts';
import type { PgliteImport } from './pglite-import.ts';
import { PostgresDatabase } from './postgres-database.ts';
import { SqlStore, type Tables } from './sql-store.ts';
import { closeSqliteDatabase, IN_MEMORY, LibsqlDialect, openSqliteDatabase, type SqliteSync, walSyncedOffThread } from './sqlite-database.ts';
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
export async function openEmbeddedStore(dataDir: string, options: { sync?: SqliteSync; logger?: Logger } = {}): Promise<SqlStore> {
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
  // Loaded only here: a server that has nothing to move never loads PGlite (an optional dependency).
  let importPgliteData: typeof import('./pglite-import.ts').importPgliteData;
  try {
    ({ importPgliteData } = await import('./pglite-import.ts'));
  } catch (error) {
    throw new Error(
      `${folder} holds the data of an earlier release (embedded PostgreSQL), and moving it into SQLite needs the optional package @electric-sql/pglite, which is not installed (${(error as Error).message}). Install the workspace with optional dependencies, or move the folder aside to start afresh.`,
      { cause: error },
    );
  }
  return importPgliteData(folder, file, logger);
}

/** Whether `dir` holds a PGlite (PostgreSQL) data directory. */
export function isPgliteDirectory(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

/** Opens a SQLite database (a file, or ':memory:'), migrates it and wraps it in the store. */
export async function openSqliteStore(path: string, options: { sync?: SqliteSync; logger?: Logger; steps?: readonly SchemaStep[] } = {}): Promise<SqlStore> {
  const sync = options.sync ?? 'full';
  const connection = openSqliteDatabase(path, sync);
  const db = new Kysely<Tables>({ dialect: new LibsqlDialect(connection) });
  try {
    const applied = await migrateSchema(db, 'sqlite', options.steps ?? SCHEMA);
    const description = path === IN_MEMORY ? 'embedded SQLite in memory' : `embedded SQLite in ${path} (synchronous=${sync})`;
    options.logger?.info({ database: description, migrations: applied }, 'database ready');
    // DB_SYNC=full: the group commits of events and journal entries are synced off the main thread.
    const groupSync = sync === 'full' && path !== IN_MEMORY ? walSyncedOffThread(path) : undefined;
    return new SqlStore(db, 'sqlite', description, {
      migrated: applied,
      groupSync,
      onClose: async () => {
        await groupSync?.close();
        closeSqliteDatabase(connection);
      },
    });
  } catch (error) {
    await db.destroy().catch(() => undefined);
    connection.close();
    throw error;
  }
}

/** Migrates a PostgreSQL database and wraps it in the store (which ends its pool when it closes). */
export async function openSqlStore(database: PostgresDatabase, logger?: Logger, options: { steps?: readonly SchemaStep[] } = {}): Promise<SqlStore> {
  const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: database.pool }) });
  try {
    const applied = await migrateSchema(db, 'postgres', options.steps ?? SCHEMA);
    logger?.info({ database: database.description, migrations: applied }, 'database ready');
    return new SqlStore(db, 'postgres', database.description, { migrated: applied });
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw error;
  }
}
