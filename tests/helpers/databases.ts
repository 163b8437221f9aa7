import { randomBytes } from 'node:crypto';
import { PostgresDatabase } from '@stepwise/backend';

/** The PostgreSQL server the test command starts; tests that need it fail loudly when it is missing. */
export function postgresUrl(): string | undefined {
  const url = process.env.TEST_DATABASE_URL;
  if (!url && process.env.REQUIRE_POSTGRES === '1') {
    throw new Error('TEST_DATABASE_URL is not set: run the suite with the test command, which starts PostgreSQL');
  }
  return url;
}

/**
 * A fresh, empty database on the test PostgreSQL server; drop it with the returned function. A
 * store opened on `db` owns its pool from then on (closing the store ends it).
 */
export async function freshPostgresDatabase(url: string): Promise<{ db: PostgresDatabase; url: string; drop: () => Promise<void> }> {
  const name = `stepwise_test_${randomBytes(6).toString('hex')}`;
  const admin = new PostgresDatabase(url);
  await admin.exec(`create database ${name}`);
  const databaseUrl = Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  const db = new PostgresDatabase(databaseUrl);
  return {
    db,
    url: databaseUrl,
    drop: async () => {
      await db.close().catch(() => undefined);
      await admin.exec(`drop database if exists ${name} with (force)`);
      await admin.close();
    },
  };
}
