import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { Logger } from '../logger.ts';
import { migrate } from './migrations.ts';
import { PgliteDatabase } from './pglite-database.ts';
import { PostgresDatabase } from './postgres-database.ts';
import type { SqlDatabase } from './sql-database.ts';
import { SqlStore } from './sql-store.ts';

/** Where the embedded database lives inside DATA_DIR. */
export const EMBEDDED_DATABASE_FOLDER = 'db';

/** Opens the configured database (a PostgreSQL server when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openStore(config: Config, logger: Logger): Promise<SqlStore> {
  const db: SqlDatabase = config.databaseUrl
    ? new PostgresDatabase(config.databaseUrl)
    : await PgliteDatabase.open(join(config.dataDir, EMBEDDED_DATABASE_FOLDER));
  return openSqlStore(db, logger);
}

/** Migrates a database and wraps it in the store. */
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
