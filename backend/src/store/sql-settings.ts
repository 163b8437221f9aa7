import type { Kysely } from 'kysely';
import type { AppSettingsRecord, SettingsChangeRecord } from './store.ts';

/** The app settings' tables (migration 0013), as both databases return them. */
export interface SettingsTables {
  app_settings: { id: number; version: number; settings: unknown; updated_at: Date | string };
  settings_changes: { version: number; at: Date | string; user_id: string; user_name: string; changes: unknown };
}

/** How a JSON column reads back on the database at hand (parsed by PostgreSQL's driver, text on SQLite). */
type JsonReader = <T>(value: unknown) => T;

/** The app settings of the store at `db`: one row, id 1. */
export async function readAppSettings(db: Kysely<SettingsTables>, parsed: JsonReader): Promise<AppSettingsRecord> {
  const row = await db.selectFrom('app_settings').select(['version', 'settings']).where('id', '=', 1).executeTakeFirst();
  return row ? { version: row.version, settings: parsed(row.settings) } : { version: 0, settings: {} };
}

/**
 * Stores the settings as `version` with the change's record, in one transaction. The change's
 * version is its primary key and every version up to the current one has its record, so a writer
 * that read an older version collides with the record of the version it meant to write, and gets
 * false (nothing written) rather than overwriting a change it did not see.
 */
export async function saveAppSettings(
  db: Kysely<SettingsTables>,
  now: string,
  version: number,
  settings: unknown,
  change: Omit<SettingsChangeRecord, 'version' | 'at'>,
): Promise<boolean> {
  try {
    await db.transaction().execute(async (tx) => {
      await tx
        .insertInto('settings_changes')
        .values({ version, at: now, user_id: change.by.id, user_name: change.by.name, changes: JSON.stringify(change.changes) })
        .execute();
      await tx
        .insertInto('app_settings')
        .values({ id: 1, version, settings: JSON.stringify(settings), updated_at: now })
        .onConflict((conflict) => conflict.column('id').doUpdateSet({ version, settings: JSON.stringify(settings), updated_at: now }))
        .execute();
    });
    return true;
  } catch (error) {
    const taken = await db.selectFrom('settings_changes').select('version').where('version', '=', version).executeTakeFirst();
    if (taken) return false;
    throw error;
  }
}

/** The latest changes, newest first. */
export async function listSettingsChanges(db: Kysely<SettingsTables>, parsed: JsonReader, limit: number): Promise<SettingsChangeRecord[]> {
  const rows = await db.selectFrom('settings_changes').selectAll().orderBy('version', 'desc').limit(limit).execute();
  return rows.map((row) => ({
    version: row.version,
    at: new Date(row.at).toISOString(),
    by: { id: row.user_id, name: row.user_name },
    changes: parsed(row.changes),
  }));
}
