/** The two SQL databases the store runs on. */
import { SETTINGS_AND_NOTIFICATION_STEPS, USER_WEBHOOKS_STEP } from './schema-steps-notify.ts';
import { WAITING_MESSAGES_STEP } from './waiting-messages.ts';
import { AGENT_TASK_STEPS } from './schema-steps-tasks.ts';

export type SqlDialectName = 'sqlite' | 'postgres';

/**
 * One step of the schema, for both databases, applied once and in order at startup through
 * Kysely's Migrator (each in its own transaction); never edit one that has shipped. Each
 * statement runs whole, as the database parses it: a `;` inside a function body or a string is
 * never a split. On SQLite, times are ISO 8601 text (UTC, milliseconds), which sorts as it reads;
 * JSON is text; tables are STRICT, so a value of the wrong type is refused rather than stored.
 * Leases (several instances) exist on PostgreSQL only.
 */
export interface SchemaStep {
  /** Its name in the migration table; steps run in the order of their names. */
  name: string;
  postgres: string[];
  sqlite: string[];
  /**
   * The version that applied this step under the version table of earlier releases
   * (schema_migrations, one list per database): a database upgraded from one has it already.
   */
  legacy?: { postgres: number; sqlite: number };
}

/**
 * What PostgreSQL's full-text indexes (step 0011) index: a query uses an expression index only
 * when it repeats the expression exactly, so the store's queries read them from here. Never edit:
 * a new expression needs a new step with a new index.
 */
export const SEARCH_EXPRESSIONS = {
  postgresTitle: `to_tsvector('english', coalesce(title, ''))`,
  postgresMessage: `(case when message->>'role' in ('user', 'assistant') and json_typeof(message->'content') = 'string' then to_tsvector('english', message->>'content') end)`,
} as const;

export const SCHEMA: SchemaStep[] = [
  {
    name: '0001 sessions, messages, runs and event logs',
    legacy: { postgres: 1, sqlite: 1 },
    postgres: [
      `
        create table sessions (
          id uuid primary key,
          title text,
          created_at timestamptz not null default now(),
          updated_at timestamptz not null default now()
        )
      `,
      `create index sessions_updated_at on sessions (updated_at desc)`,
      `
        create table messages (
          session_id uuid not null references sessions (id) on delete cascade,
          position integer not null,
          message json not null,
          after_seq integer not null default 0,
          created_at timestamptz not null default now(),
          primary key (session_id, position)
        )
      `,
      `
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
        )
      `,
      `create index runs_session on runs (session_id, started_at)`,
      `create index runs_running on runs (status) where status = 'running'`,
      `
        create table events (
          session_id uuid not null references sessions (id) on delete cascade,
          seq integer not null,
          run_id uuid,
          payload json not null,
          primary key (session_id, seq)
        )
      `,
    ],
    sqlite: [
      `
        create table sessions (
          id text primary key,
          title text,
          created_at text not null,
          updated_at text not null
        ) strict
      `,
      `create index sessions_updated_at on sessions (updated_at desc, created_at desc)`,
      `
        create table messages (
          session_id text not null references sessions (id) on delete cascade,
          position integer not null,
          message text not null,
          after_seq integer not null default 0,
          created_at text not null,
          primary key (session_id, position)
        ) strict
      `,
      `
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
        ) strict
      `,
      `create index runs_session on runs (session_id, started_at)`,
      `create index runs_running on runs (status) where status = 'running'`,
      `
        create table events (
          session_id text not null references sessions (id) on delete cascade,
          seq integer not null,
          run_id text,
          payload text not null,
          primary key (session_id, seq)
        ) strict
      `,
    ],
  },
  {
    name: '0002 token counts as 64-bit integers; where each run begins in its log',
    // A model may report counts past 2^31 - 1 (in error, or across a long run): an integer column
    // would refuse the run's end and leave the run open. after_seq tells a restart which logged
    // events came after the run began, for runs whose events carry no run id (plain chat answers).
    legacy: { postgres: 2, sqlite: 1 },
    postgres: [
      `alter table runs alter column prompt_tokens type bigint, alter column completion_tokens type bigint`,
      `alter table runs add column after_seq integer`,
    ],
    sqlite: [],
  },
  {
    name: '0003 run journal: every effect of a run, by position; snapshots of a session',
    legacy: { postgres: 3, sqlite: 2 },
    postgres: [
      `
        create table run_journal (
          run_id uuid not null references runs (id) on delete cascade,
          position integer not null,
          kind text not null,
          key text not null,
          value jsonb not null,
          step integer not null default 0,
          primary key (run_id, position)
        )
      `,
      `
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
        )
      `,
      `create index snapshots_session on snapshots (session_id, created_at)`,
    ],
    sqlite: [
      `
        create table run_journal (
          run_id text not null references runs (id) on delete cascade,
          position integer not null,
          kind text not null,
          key text not null,
          value text not null,
          step integer not null default 0,
          primary key (run_id, position)
        ) strict
      `,
      `
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
        ) strict
      `,
      `create index snapshots_session on snapshots (session_id, created_at)`,
    ],
  },
  {
    name: '0004 session leases: which instance holds a session (and its run) when several share the database',
    legacy: { postgres: 4, sqlite: 2 },
    postgres: [
      `
        create table session_leases (
          session_id text primary key,
          instance_id text not null,
          run_id text,
          expires_at timestamptz not null
        )
      `,
      `create index session_leases_expiry on session_leases (expires_at) where run_id is not null`,
    ],
    sqlite: [],
  },
  {
    name: "0005 a run's cached and reasoning tokens and its cost in USD",
    legacy: { postgres: 5, sqlite: 3 },
    postgres: [`alter table runs add column spending jsonb`],
    sqlite: [`alter table runs add column spending text`],
  },
  {
    name: '0006 every chat has an owner; the chats from before belong to the local user',
    legacy: { postgres: 6, sqlite: 4 },
    postgres: [
      `alter table sessions add column owner text not null default 'local'`,
      `alter table sessions add column owner_name text`,
      `create index sessions_owner on sessions (owner, updated_at desc)`,
    ],
    sqlite: [
      `alter table sessions add column owner text not null default 'local'`,
      `alter table sessions add column owner_name text`,
      `create index sessions_owner on sessions (owner, updated_at desc)`,
    ],
  },
  {
    name: '0007 a lease generation, which fences the writes of an instance that lost its lease',
    // One sequence for every lease: a generation never comes back, even for a lease deleted and made again.
    legacy: { postgres: 7, sqlite: 4 },
    postgres: [
      `create sequence session_lease_generation`,
      `alter table session_leases add column generation bigint not null default nextval('session_lease_generation')`,
    ],
    sqlite: [],
  },
  {
    name: "0008 a lease names its run's user, so MAX_RUNS_PER_USER counts runs not yet stored",
    postgres: [`alter table session_leases add column owner text`, `create index session_leases_owner on session_leases (owner) where run_id is not null`],
    sqlite: [],
  },
  {
    // The chats of `local` were open to any identity named `local` (a proxy's user, an OIDC sub):
    // they now have the empty owner, which no identity can have, until an admin adopts them.
    name: '0009 the chats from before sign-in have an owner no identity can take',
    postgres: [
      `update sessions set owner = '' where owner = 'local'`,
      `alter table sessions alter column owner set default ''`,
      `update session_leases set owner = '' where owner = 'local'`,
    ],
    sqlite: [`update sessions set owner = '' where owner = 'local'`],
  },
  {
    name: '0010 ended sign-ins, remembered until their cookies expire',
    postgres: [
      `create table revoked_sign_ins (id text primary key, expires_at timestamptz not null)`,
      `create index revoked_sign_ins_expiry on revoked_sign_ins (expires_at)`,
    ],
    sqlite: [
      `create table revoked_sign_ins (id text primary key, expires_at text not null) strict`,
      `create index revoked_sign_ins_expiry on revoked_sign_ins (expires_at)`,
    ],
  },
  {
    // SQLite: every title and every user message and answer is a row of search_docs (the title at
    // position -1), kept by triggers, and FTS5 indexes them (external content: the text is kept
    // once). The rows have an integer key of their own, which VACUUM never renumbers. PostgreSQL:
    // expression indexes, which the queries repeat word for word (SEARCH_EXPRESSIONS). Both index
    // the chats there are now.
    name: '0011 full-text search over chat titles, user messages and answers',
    postgres: [
      `create index sessions_title_search on sessions using gin ((${SEARCH_EXPRESSIONS.postgresTitle}))`,
      `create index messages_search on messages using gin ((${SEARCH_EXPRESSIONS.postgresMessage}))`,
    ],
    sqlite: [
      `
        create table search_docs (
          id integer primary key,
          session_id text not null references sessions (id) on delete cascade,
          position integer not null,
          body text not null,
          unique (session_id, position)
        ) strict
      `,
      `create virtual table search_fts using fts5 (body, content = 'search_docs', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')`,
      `create trigger search_docs_insert after insert on search_docs begin insert into search_fts (rowid, body) values (new.id, new.body); end`,
      `create trigger search_docs_delete after delete on search_docs begin insert into search_fts (search_fts, rowid, body) values ('delete', old.id, old.body); end`,
      `
        create trigger messages_search_insert after insert on messages
        when json_extract(new.message, '$.role') in ('user', 'assistant') and json_type(new.message, '$.content') = 'text'
        begin
          insert into search_docs (session_id, position, body) values (new.session_id, new.position, json_extract(new.message, '$.content'));
        end
      `,
      `
        create trigger messages_search_delete after delete on messages
        begin
          delete from search_docs where session_id = old.session_id and position = old.position;
        end
      `,
      `
        create trigger sessions_search_insert after insert on sessions when new.title is not null
        begin
          insert into search_docs (session_id, position, body) values (new.id, -1, new.title);
        end
      `,
      `
        create trigger sessions_search_title after update of title on sessions when new.title is not old.title
        begin
          delete from search_docs where session_id = new.id and position = -1;
          insert into search_docs (session_id, position, body) select new.id, -1, new.title where new.title is not null;
        end
      `,
      `insert into search_docs (session_id, position, body) select id, -1, title from sessions where title is not null`,
      `
        insert into search_docs (session_id, position, body)
        select session_id, position, json_extract(message, '$.content') from messages
        where json_extract(message, '$.role') in ('user', 'assistant') and json_type(message, '$.content') = 'text'
      `,
    ],
  },
  {
    // A link is found by its token's SHA-256 (the token itself is never stored); deleting the row
    // revokes it, which every instance sees at its next read.
    name: '0012 read-only links to a chat as it stood (shared chats)',
    postgres: [
      `
        create table chat_shares (
          id uuid primary key,
          token_hash text not null unique,
          session_id uuid not null references sessions (id) on delete cascade,
          created_by text not null,
          at_seq integer not null,
          include_files boolean not null default false,
          created_at timestamptz not null default now(),
          expires_at timestamptz
        )
      `,
      `create index chat_shares_session on chat_shares (session_id, created_at)`,
    ],
    sqlite: [
      `
        create table chat_shares (
          id text primary key,
          token_hash text not null unique,
          session_id text not null references sessions (id) on delete cascade,
          created_by text not null,
          at_seq integer not null,
          include_files integer not null default 0,
          created_at text not null,
          expires_at text
        ) strict
      `,
      `create index chat_shares_session on chat_shares (session_id, created_at)`,
    ],
  },
  ...SETTINGS_AND_NOTIFICATION_STEPS,
  WAITING_MESSAGES_STEP,
  ...AGENT_TASK_STEPS,
  USER_WEBHOOKS_STEP,
];
