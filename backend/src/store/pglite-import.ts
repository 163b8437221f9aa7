import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../logger.ts';
import { Kysely } from 'kysely';
import { migrateSchema, SCHEMA } from './migrations.ts';
import { PgliteDatabase } from './pglite-database.ts';
import { LOCAL_OWNER } from './store.ts';
import { closeSqliteDatabase, LibsqlDialect, openSqliteDatabase, pragma, type SqliteConnection } from './sqlite-database.ts';

/** What an import moved, and where the old folder went. */
export interface PgliteImport {
  sessions: number;
  messages: number;
  runs: number;
  events: number;
  /** The old folder's new name: it is kept, never deleted. */
  movedAside: string;
}

/** Rows read from PGlite per query, so that a large event log never sits in memory whole. */
const PAGE_SIZE = 2_000;

/**
 * Copies the sessions, messages, runs (with their checkpoints) and events of the PGlite data
 * directory `from` into a new SQLite database at `to`, then renames `from` to
 * `<from>.migrated-<time>`. The copy is built in a side file and committed in one transaction,
 * then renamed into place: a crash at any point leaves either no `to` (and the next start copies
 * again) or a complete one.
 */
export async function importPgliteData(from: string, to: string, logger?: Logger): Promise<PgliteImport> {
  const building = `${to}.importing`;
  removeDatabaseFiles(building);
  logger?.info({ from, to }, 'moving the embedded PostgreSQL data (PGlite) into SQLite');
  const source = await PgliteDatabase.open(from);
  let counts: Omit<PgliteImport, 'movedAside'>;
  try {
    // The schema upgrade the old store ran at every start: a folder made by an older release gets its newer columns.
    await upgradeOldSchema(source);
    const target = openSqliteDatabase(building, 'full');
    try {
      // One file, no write-ahead log beside it, so that the rename below moves the whole database.
      pragma(target, 'journal_mode = delete');
      const schema = new Kysely<unknown>({ dialect: new LibsqlDialect(target) });
      await migrateSchema(schema, 'sqlite');
      await schema.destroy();
      counts = await copyAll(source, target);
    } finally {
      closeSqliteDatabase(target);
    }
  } catch (error) {
    removeDatabaseFiles(building);
    throw error;
  } finally {
    await source.close();
  }
  renameSync(building, to);
  syncDirectory(dirname(to));
  const movedAside = `${from}.migrated-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(from, movedAside);
  syncDirectory(dirname(from));
  logger?.info({ ...counts, from, to, movedAside }, 'moved the embedded PostgreSQL data into SQLite; the old folder is kept');
  return { ...counts, movedAside };
}

/**
 * Brings a folder made by an older release to the columns the import reads, as the release after
 * it would have: the steps its version table (schema_migrations) does not list yet, in one transaction.
 */
async function upgradeOldSchema(source: PgliteDatabase): Promise<void> {
  await source.exec(
    'create table if not exists schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())',
  );
  const [row] = await source.query<{ version: number | null }>('select max(version) as version from schema_migrations');
  const current = Number(row?.version ?? 0);
  await source.transaction(async (tx) => {
    for (const step of SCHEMA) {
      if (!step.legacy || step.legacy.postgres <= current) continue;
      for (const statement of step.postgres) await tx.exec(statement);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [step.legacy.postgres, step.name]);
    }
  });
}

async function copyAll(source: PgliteDatabase, target: SqliteConnection): Promise<Omit<PgliteImport, 'movedAside'>> {
  const insert = {
    session: target.prepare('insert into sessions (id, title, created_at, updated_at, owner, owner_name) values (?, ?, ?, ?, ?, ?)'),
    message: target.prepare('insert into messages (session_id, position, message, after_seq, created_at) values (?, ?, ?, ?, ?)'),
    run: target.prepare(
      `insert into runs (id, session_id, strategy, max_steps, status, end_reason, steps, prompt_tokens, completion_tokens,
         after_seq, started_at, ended_at, checkpoint) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    event: target.prepare('insert into events (session_id, seq, run_id, payload) values (?, ?, ?, ?)'),
  };
  const counts = { sessions: 0, messages: 0, runs: 0, events: 0 };
  // Reading PGlite is asynchronous, so the transaction is opened by hand rather than with db.transaction().
  target.exec('begin immediate');
  try {
    for await (const row of pages<{ id: string; title: string | null; created_at: Date; updated_at: Date; owner: string; owner_name: string | null }>(
      source,
      'select id, title, created_at, updated_at, owner, owner_name from sessions',
      ['id'],
    )) {
      // The chats of `local` (those from before sign-in) get the owner no sign-in can take, as migration 0009 gives them.
      const owner = row.owner === 'local' ? LOCAL_OWNER : row.owner;
      insert.session.run([row.id, row.title, iso(row.created_at), iso(row.updated_at), owner, row.owner_name]);
      counts.sessions++;
    }
    for await (const row of pages<{ session_id: string; position: number; message: string; after_seq: number; created_at: Date }>(
      source,
      'select session_id, position, message::text as message, after_seq, created_at from messages',
      ['session_id', 'position'],
    )) {
      insert.message.run([row.session_id, row.position, row.message, row.after_seq, iso(row.created_at)]);
      counts.messages++;
    }
    for await (const row of pages<PgliteRun>(
      source,
      `select id, session_id, strategy, max_steps, status, end_reason, steps, prompt_tokens::text as prompt_tokens,
         completion_tokens::text as completion_tokens, after_seq, started_at, ended_at, checkpoint::text as checkpoint from runs`,
      ['id'],
    )) {
      insert.run.run([
        row.id,
        row.session_id,
        row.strategy,
        row.max_steps,
        row.status,
        row.end_reason,
        row.steps,
        tokens(row.prompt_tokens),
        tokens(row.completion_tokens),
        row.after_seq,
        iso(row.started_at),
        row.ended_at === null ? null : iso(row.ended_at),
        row.checkpoint,
      ]);
      counts.runs++;
    }
    for await (const row of pages<{ session_id: string; seq: number; run_id: string | null; payload: string }>(
      source,
      'select session_id, seq, run_id, payload::text as payload from events',
      ['session_id', 'seq'],
    )) {
      insert.event.run([row.session_id, row.seq, row.run_id, row.payload]);
      counts.events++;
    }
    target.exec('commit');
  } catch (error) {
    if (target.inTransaction) target.exec('rollback');
    throw error;
  }
  return counts;
}

interface PgliteRun {
  id: string;
  session_id: string;
  strategy: string;
  max_steps: number;
  status: string;
  end_reason: string | null;
  steps: number | null;
  prompt_tokens: string;
  completion_tokens: string;
  after_seq: number | null;
  started_at: Date;
  ended_at: Date | null;
  checkpoint: string | null;
}

/**
 * The rows of `select`, a page at a time in the order of `key` (a primary key): each page starts
 * after the last row of the one before (keyset paging), so no row is read twice or skipped.
 */
async function* pages<T extends object>(source: PgliteDatabase, select: string, key: (keyof T & string)[]): AsyncGenerator<T> {
  const columns = key.join(', ');
  const placeholders = key.map((_, index) => `$${index + 1}`).join(', ');
  let last: T | undefined;
  for (;;) {
    const rows = last
      ? await source.query<T>(
          `select * from (${select}) page where (${columns}) > (${placeholders}) order by ${columns} limit ${PAGE_SIZE}`,
          key.map((name) => last![name]),
        )
      : await source.query<T>(`select * from (${select}) page order by ${columns} limit ${PAGE_SIZE}`);
    yield* rows;
    if (rows.length < PAGE_SIZE) return;
    last = rows.at(-1);
  }
}

const iso = (value: Date | string) => new Date(value).toISOString();
/** A stored token total; the old store capped them at 2^53 - 1 too. */
const tokens = (value: string) => Math.min(Number(value), Number.MAX_SAFE_INTEGER);

/** Removes a SQLite database with its journal, write-ahead log and shared-memory files. */
function removeDatabaseFiles(path: string): void {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

/** Makes a rename in `dir` durable (where the platform can sync a directory). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Windows cannot open a directory; its renames are durable without this.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
