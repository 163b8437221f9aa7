import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import { type SchemaStep, SCHEMA, type SqlDialectName } from './schema-steps.ts';

export { SCHEMA, type SchemaStep, SEARCH_EXPRESSIONS, type SqlDialectName } from './schema-steps.ts';

/** The version table of earlier releases, whose applied versions stand for the steps they made. */
const LEGACY_TABLE = 'schema_migrations';

/** The highest version an earlier release applied to this database (0 when it never had one). */
async function legacyVersion<T>(db: Kysely<T>, dialect: SqlDialectName): Promise<number> {
  const exists =
    dialect === 'postgres'
      ? await sql<{ found: string | null }>`select to_regclass(${LEGACY_TABLE})::text as found`.execute(db)
      : await sql<{ found: string | null }>`select name as found from sqlite_master where type = 'table' and name = ${LEGACY_TABLE}`.execute(db);
  if (!exists.rows[0]?.found) return 0;
  const { rows } = await sql<{ version: number | null }>`select max(version) as version from ${sql.table(LEGACY_TABLE)}`.execute(db);
  return Number(rows[0]?.version ?? 0);
}

/** The steps as Kysely migrations for one database; a step an earlier release applied already is only recorded. */
function provider(dialect: SqlDialectName, steps: readonly SchemaStep[]): MigrationProvider {
  return {
    async getMigrations() {
      const migrations: Record<string, Migration> = {};
      // Read once, by the first pending step, inside the migration run: the old table never changes.
      let legacy: Promise<number> | undefined;
      for (const step of steps) {
        migrations[step.name] = {
          async up(db) {
            legacy ??= legacyVersion(db, dialect);
            if (step.legacy && (await legacy) >= step.legacy[dialect]) return;
            for (const statement of step[dialect]) await sql.raw(statement).execute(db);
          },
        };
      }
      return migrations;
    },
  };
}

/**
 * Brings the schema up to date; resolves with the names of the steps applied now. Each step
 * commits with its record, so a crash leaves no half; on PostgreSQL several instances starting at
 * once on a new database migrate one after the other (the Migrator's lock).
 */
export async function migrateSchema<T>(db: Kysely<T>, dialect: SqlDialectName, steps: readonly SchemaStep[] = SCHEMA): Promise<string[]> {
  const migrator = new Migrator({ db, provider: provider(dialect, steps) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error')?.migrationName;
    throw new Error(
      `The database schema could not be brought up to date${failed ? ` (step "${failed}")` : ''}: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  }
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
