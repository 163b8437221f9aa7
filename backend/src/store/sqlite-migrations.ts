import type { SqliteConnection } from './sqlite-database.ts';

/**
 * Versioned schema changes of the SQLite store, applied in order at startup; never edit one that
 * has shipped. Times are ISO 8601 text (UTC, milliseconds), which sorts as it reads; JSON is text.
 * Tables are STRICT, so a value of the wrong type is refused rather than stored.
 */
export const SQLITE_MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'sessions, messages, runs and event logs',
    sql: `
      create table sessions (
        id text primary key,
        title text,
        created_at text not null,
        updated_at text not null
      ) strict;
      create index sessions_updated_at on sessions (updated_at desc, created_at desc);

      create table messages (
        session_id text not null references sessions (id) on delete cascade,
        position integer not null,
        message text not null,
        after_seq integer not null default 0,
        created_at text not null,
        primary key (session_id, position)
      ) strict;

      -- Token counts are SQLite integers (64-bit); the store caps totals at 2^53 - 1 so they read back exactly.
      create table runs (
        id text primary key,
        session_id text not null references sessions (id) on delete cascade,
        strategy text not null,
        max_steps integer not null,
        status text not null,
        end_reason text,
        steps integer,
        prompt_tokens integer not null default 0,
        completion_tokens integer not null default 0,
        after_seq integer,
        started_at text not null,
        ended_at text,
        checkpoint text
      ) strict;
      create index runs_session on runs (session_id, started_at);
      create index runs_running on runs (status) where status = 'running';

      create table events (
        session_id text not null references sessions (id) on delete cascade,
        seq integer not null,
        run_id text,
        payload text not null,
        primary key (session_id, seq)
      ) strict;
    `,
  },
  {
    version: 2,
    name: 'run journal: every effect of a run, by position; snapshots of a session',
    sql: `
      create table run_journal (
        run_id text not null references runs (id) on delete cascade,
        position integer not null,
        kind text not null,
        key text not null,
        value text not null,
        step integer not null default 0,
        primary key (run_id, position)
      ) strict;

      create table snapshots (
        id text primary key,
        session_id text not null references sessions (id) on delete cascade,
        label text not null,
        kind text not null,
        run_id text,
        step integer,
        at_seq integer not null,
        messages text not null,
        created_at text not null
      ) strict;
      create index snapshots_session on snapshots (session_id, created_at);
    `,
  },
  {
    version: 3,
    name: "a run's cached and reasoning tokens and its cost in USD",
    sql: `alter table runs add column spending text;`,
  },
  {
    version: 4,
    name: 'every chat has an owner; the chats from before belong to the local user',
    sql: `
      alter table sessions add column owner text not null default 'local';
      alter table sessions add column owner_name text;
      create index sessions_owner on sessions (owner, updated_at desc);
    `,
  },
];

/** Brings the schema up to date; each migration commits with its version, so a crash leaves no half. */
export function migrateSqlite(db: SqliteConnection): number[] {
  db.exec('create table if not exists schema_migrations (version integer primary key, name text not null, applied_at text not null) strict');
  const applied = new Set((db.prepare('select version from schema_migrations').all([]) as { version: number }[]).map((row) => row.version));
  const record = db.prepare('insert into schema_migrations (version, name, applied_at) values (?, ?, ?)');
  const done: number[] = [];
  for (const migration of SQLITE_MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      record.run([migration.version, migration.name, new Date().toISOString()]);
    }).immediate();
    done.push(migration.version);
  }
  return done;
}
