import type { SqlDatabase } from './sql-database.ts';

/** Versioned schema changes, applied in order at startup; never edit one that has shipped. */
/** One step of the schema: a script, applied once, in one transaction with its version. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'sessions, messages, runs and event logs',
    sql: `
      create table sessions (
        id uuid primary key,
        title text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index sessions_updated_at on sessions (updated_at desc);

      create table messages (
        session_id uuid not null references sessions (id) on delete cascade,
        position integer not null,
        message json not null,
        after_seq integer not null default 0,
        created_at timestamptz not null default now(),
        primary key (session_id, position)
      );

      create table runs (
        id uuid primary key,
        session_id uuid not null references sessions (id) on delete cascade,
        strategy text not null,
        max_steps integer not null,
        status text not null,
        end_reason text,
        steps integer,
        prompt_tokens integer not null default 0,
        completion_tokens integer not null default 0,
        started_at timestamptz not null default now(),
        ended_at timestamptz,
        checkpoint json
      );
      create index runs_session on runs (session_id, started_at);
      create index runs_running on runs (status) where status = 'running';

      create table events (
        session_id uuid not null references sessions (id) on delete cascade,
        seq integer not null,
        run_id uuid,
        payload json not null,
        primary key (session_id, seq)
      );
    `,
  },
  {
    version: 2,
    name: 'token counts as 64-bit integers; where each run begins in its log',
    // A model may report counts past 2^31 - 1 (in error, or across a long run): an integer column
    // would refuse the run's end and leave the run open. after_seq tells a restart which logged
    // events came after the run began, for runs whose events carry no run id (plain chat answers).
    sql: `
      alter table runs alter column prompt_tokens type bigint, alter column completion_tokens type bigint;
      alter table runs add column after_seq integer;
    `,
  },
  {
    version: 3,
    name: 'run journal: every effect of a run, by position; snapshots of a session',
    sql: `
      create table run_journal (
        run_id uuid not null references runs (id) on delete cascade,
        position integer not null,
        kind text not null,
        key text not null,
        value jsonb not null,
        step integer not null default 0,
        primary key (run_id, position)
      );

      create table snapshots (
        id uuid primary key,
        session_id uuid not null references sessions (id) on delete cascade,
        label text not null,
        kind text not null,
        run_id uuid,
        step integer,
        at_seq integer not null,
        messages jsonb not null,
        created_at timestamptz not null default now()
      );
      create index snapshots_session on snapshots (session_id, created_at);
    `,
  },
  {
    version: 4,
    name: 'session leases: which instance holds a session (and its run) when several share the database',
    sql: `
      create table session_leases (
        session_id text primary key,
        instance_id text not null,
        run_id text,
        expires_at timestamptz not null
      );
      create index session_leases_expiry on session_leases (expires_at) where run_id is not null;
    `,
  },
  {
    version: 5,
    name: "a run's cached and reasoning tokens and its cost in USD",
    sql: `alter table runs add column spending jsonb;`,
  },
  {
    version: 6,
    name: 'every chat has an owner; the chats from before belong to the local user',
    sql: `
      alter table sessions add column owner text not null default 'local';
      alter table sessions add column owner_name text;
      create index sessions_owner on sessions (owner, updated_at desc);
    `,
  },
  {
    version: 7,
    name: 'a lease generation, which fences the writes of an instance that lost its lease',
    // One sequence for every lease: a generation never comes back, even for a lease deleted and made again.
    sql: `
      create sequence session_lease_generation;
      alter table session_leases add column generation bigint not null default nextval('session_lease_generation');
    `,
  },
];

/** Brings the schema up to date in one transaction: a crash leaves no half, and concurrent starts wait their turn. */
export async function migrate(db: SqlDatabase, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const done: number[] = [];
  // Several instances may start at once on a new database: they migrate one after the other
  // (the lock is the transaction's), and each sees what the one before it applied.
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(703170)');
    await tx.query(
      'create table if not exists schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())',
    );
    const applied = new Set((await tx.query<{ version: number }>('select version from schema_migrations')).map((row) => row.version));
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      // The whole script at once: the server parses it, so a `;` in a function body or a string is no split.
      await tx.exec(migration.sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [migration.version, migration.name]);
      done.push(migration.version);
    }
  });
  return done;
}
