import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  EMBEDDED_DATABASE_FOLDER,
  LOCAL_OWNER,
  loadConfig,
  type Logger,
  openSqliteDatabase,
  openSqliteStore,
  openStore,
  SCHEMA,
  SQLITE_DATABASE_FILE,
  SqlStore,
  type Store,
} from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterEach, describe, expect, it } from 'vitest';
import { expectSearchIndexedOnUpgrade } from '../helpers/store-upgrades.ts';

const config = (env: Record<string, string>) => loadConfig(env, { promptsDir: '' });

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined, child: () => silent };

let dataDir: string;
const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function newDataDir(): string {
  dataDir = mkdtempSync(join(tmpdir(), 'stepwise-sqlite-'));
  return dataDir;
}

async function open(env: Record<string, string>, logger: Logger = silent): Promise<Store> {
  const store = await openStore(config(env), logger);
  stores.push(store);
  return store;
}

describe('the DB_SYNC setting', () => {
  it('syncs at checkpoints by default, and takes normal or full in any case', () => {
    expect(config({}).dbSync).toBe('normal');
    expect(config({ DB_SYNC: 'NORMAL' }).dbSync).toBe('normal');
    expect(config({ DB_SYNC: ' full ' }).dbSync).toBe('full');
  });

  it('refuses anything else, naming the variable', () => {
    expect(() => config({ DB_SYNC: 'off' })).toThrow(ConfigError);
    expect(() => config({ DB_SYNC: 'off' })).toThrow(/^Invalid DB_SYNC: must be normal or full \(got "off"\)$/);
  });
});

describe('the embedded store', () => {
  it('is SQLite in DATA_DIR/stepwise.db, in WAL mode, synced as DB_SYNC says', async () => {
    const dir = newDataDir();
    const store = await open({ DATA_DIR: dir, DB_SYNC: 'normal' });
    expect(store).toBeInstanceOf(SqlStore);
    expect((store as SqlStore).dialect).toBe('sqlite');
    expect((store as SqlStore).description).toBe(`embedded SQLite in ${join(dir, SQLITE_DATABASE_FILE)} (synchronous=normal)`);
    expect(readdirSync(dir)).toContain(SQLITE_DATABASE_FILE);
    expect(readdirSync(dir)).not.toContain(EMBEDDED_DATABASE_FOLDER);
    const db = openSqliteDatabase(join(dir, SQLITE_DATABASE_FILE), 'full');
    try {
      expect(db.prepare('pragma journal_mode').get([])).toMatchObject({ journal_mode: 'wal' });
    } finally {
      db.close();
    }
  });

  it('keeps everything across a close and a reopen, and folds its log into the file on close', async () => {
    const dir = newDataDir();
    const sessionId = randomUUID();
    const runId = randomUUID();
    const first = await open({ DATA_DIR: dir });
    await first.createSession(sessionId);
    await first.appendMessages(sessionId, [{ role: 'user', content: 'Hello' }], 0);
    await first.createRun({ id: runId, sessionId, strategy: 'chat', maxSteps: 0, afterSeq: 0 });
    const event = { type: 'assistant_message', content: 'Hi', seq: 1, ts: new Date().toISOString(), run_id: runId } as LoggedEvent;
    await first.appendEvent(sessionId, event);
    await first.saveCheckpoint(runId, { step: 1 });
    await first.close();
    stores.length = 0;
    // A clean close leaves the database in one file (the write-ahead log is empty).
    const wal = join(dir, `${SQLITE_DATABASE_FILE}-wal`);
    expect(existsSync(wal) ? statSync(wal).size : 0).toBe(0);

    const second = await open({ DATA_DIR: dir });
    expect(await second.getSession(sessionId)).toMatchObject({ title: 'Hello' });
    expect(await second.listEvents(sessionId, 0)).toEqual([event]);
    expect(await second.listRunningRuns()).toMatchObject([{ id: runId, checkpoint: { step: 1 } }]);
  });

  it('applies each schema step once, recorded in the migration table', async () => {
    const dir = newDataDir();
    const path = join(dir, SQLITE_DATABASE_FILE);
    const first = await openSqliteStore(path);
    expect(first.migrated).toEqual(SCHEMA.map((step) => step.name));
    await first.close();
    const second = await openSqliteStore(path);
    stores.push(second);
    expect(second.migrated).toEqual([]);
    const db = openSqliteDatabase(path, 'full');
    try {
      const rows = db.prepare('select name from kysely_migration order by name').all([]) as { name: string }[];
      expect(rows.map((row) => row.name)).toEqual(SCHEMA.map((step) => step.name));
    } finally {
      db.close();
    }
  });

  it('upgrades a database of an earlier release (its own version table) without running its steps again, and gives its chats to the local user', async () => {
    const dir = newDataDir();
    const path = join(dir, SQLITE_DATABASE_FILE);
    const sessionId = randomUUID();
    // A database as the release before owners left it: its versions up to 3, one chat in it.
    const db = openSqliteDatabase(path, 'full');
    try {
      db.exec('create table schema_migrations (version integer primary key, name text not null, applied_at text not null) strict');
      for (const step of SCHEMA.filter((candidate) => candidate.legacy !== undefined && candidate.legacy.sqlite <= 3)) {
        for (const statement of step.sqlite) db.exec(statement);
        db.prepare('insert or ignore into schema_migrations (version, name, applied_at) values (?, ?, ?)').run([
          step.legacy!.sqlite,
          step.name,
          new Date().toISOString(),
        ]);
      }
      const now = new Date().toISOString();
      db.prepare('insert into sessions (id, title, created_at, updated_at) values (?, ?, ?, ?)').run([sessionId, 'From before', now, now]);
    } finally {
      db.close();
    }
    const store = await openSqliteStore(path);
    stores.push(store);
    // Every step is recorded; those before the upgrade ran no SQL (a second "create table" would have failed).
    expect(store.migrated).toEqual(SCHEMA.map((step) => step.name));
    expect(await store.getSession(sessionId)).toMatchObject({ title: 'From before', owner: LOCAL_OWNER, ownerName: null });
    expect((await store.listSessions(10, LOCAL_OWNER)).map((session) => session.id)).toEqual([sessionId]);
    expect(await store.listSessions(10, 'local')).toEqual([]);
    expect(await store.listSessions(10, 'alice')).toEqual([]);
  });

  /** The step that gave the chats of `local` an owner no identity can take. */
  const OWNERS_STEP = SCHEMA.findIndex((step) => step.name.startsWith('0009 '));

  it('upgrades the chats of `local` to the owner no identity can take, and leaves everyone else’s', async () => {
    const path = join(newDataDir(), SQLITE_DATABASE_FILE);
    const [before, alices] = [randomUUID(), randomUUID()];
    // As the release before left it: every step but the last, a chat of `local` and one of Alice's.
    const old = await openSqliteStore(path, { steps: SCHEMA.slice(0, OWNERS_STEP) });
    await old.close();
    const db = openSqliteDatabase(path, 'full');
    try {
      const now = new Date().toISOString();
      const insert = db.prepare('insert into sessions (id, title, created_at, updated_at, owner) values (?, ?, ?, ?, ?)');
      insert.run([before, 'From before', now, now, 'local']);
      insert.run([alices, 'Hers', now, now, 'alice']);
    } finally {
      db.close();
    }
    const store = await openSqliteStore(path);
    stores.push(store);
    expect(store.migrated).toEqual(SCHEMA.slice(OWNERS_STEP).map((step) => step.name));
    expect(await store.getSession(before)).toMatchObject({ title: 'From before', owner: LOCAL_OWNER });
    expect(await store.getSession(alices)).toMatchObject({ title: 'Hers', owner: 'alice' });
  });

  it('indexes the chats of an earlier release for search when it upgrades', async () => {
    const path = join(newDataDir(), SQLITE_DATABASE_FILE);
    await expectSearchIndexedOnUpgrade(
      (steps) => openSqliteStore(path, { steps }),
      async () => {
        const store = await openSqliteStore(path);
        stores.push(store);
        return store;
      },
    );
  });

  it('leaves an old embedded PostgreSQL folder beside an existing SQLite file alone, and says so', async () => {
    const dir = newDataDir();
    await open({ DATA_DIR: dir });
    await stores.pop()!.close();
    mkdirSync(join(dir, EMBEDDED_DATABASE_FOLDER));
    const warnings: string[] = [];
    const logger: Logger = { ...silent, warn: (_object, message) => void warnings.push(String(message)), child: () => logger };
    await open({ DATA_DIR: dir }, logger);
    expect(warnings).toEqual([expect.stringMatching(/old embedded PostgreSQL folder sits beside stepwise\.db and is not read/)]);
    expect(readdirSync(dir)).toContain(EMBEDDED_DATABASE_FOLDER);
  });

  it('refuses an event of a session that does not exist', async () => {
    const store = await openSqliteStore(':memory:');
    stores.push(store);
    const event = { type: 'assistant_message', content: 'x', seq: 1, ts: new Date().toISOString() } as LoggedEvent;
    await expect(store.appendEvent(randomUUID(), event)).rejects.toThrow(/FOREIGN KEY/);
    await expect(store.appendMessages(randomUUID(), [{ role: 'user', content: 'x' }], 0)).rejects.toThrow(/FOREIGN KEY/);
  });
});
