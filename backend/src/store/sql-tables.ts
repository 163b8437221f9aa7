import type { Generated, Kysely, Selectable, Transaction } from 'kysely';
import type { AgentTaskTables } from './agent-task-store.ts';
import type { DeliveryTables } from './delivery-outbox.ts';
import type { SqlDialectName } from './migrations.ts';
import type { PushTables } from './push-store.ts';
import type { WaitingTables } from './waiting-messages.ts';
import type { SettingsTables } from './sql-settings.ts';
import type { RunRecord, SessionRecord, ShareRecord, SnapshotRecord } from './store.ts';

/**
 * The tables as both databases return them. A time is a Date from PostgreSQL and ISO text from
 * SQLite; a 64-bit count a string from node-postgres; JSON parsed from PostgreSQL and text from
 * SQLite. Every write passes times as ISO text and JSON as text, which both take.
 */
export type Time = Date | string;
export type Json = unknown;

export interface Tables extends SettingsTables, DeliveryTables, PushTables, WaitingTables, AgentTaskTables {
  sessions: { id: string; title: string | null; created_at: Time; updated_at: Time; owner: string; owner_name: string | null };
  revoked_sign_ins: { id: string; expires_at: Time };
  chat_shares: {
    id: string;
    token_hash: string;
    session_id: string;
    created_by: string;
    at_seq: number;
    include_files: boolean | number;
    created_at: Time;
    expires_at: Time | null;
  };
  messages: { session_id: string; position: number; message: Json; after_seq: number; created_at: Time };
  runs: {
    id: string;
    session_id: string;
    strategy: string;
    max_steps: number;
    status: RunRecord['status'];
    end_reason: Generated<string | null>;
    steps: Generated<number | null>;
    prompt_tokens: Generated<number | string | bigint>;
    completion_tokens: Generated<number | string | bigint>;
    after_seq: number | null;
    started_at: Time;
    ended_at: Generated<Time | null>;
    checkpoint: Generated<Json | null>;
    spending: Generated<Json | null>;
  };
  events: { session_id: string; seq: number; run_id: string | null; payload: Json };
  run_journal: { run_id: string; position: number; kind: string; key: string; value: Json; step: number };
  snapshots: {
    id: string;
    session_id: string;
    label: string;
    kind: SnapshotRecord['kind'];
    run_id: string | null;
    step: number | null;
    at_seq: number;
    messages: Json;
    created_at: Time;
  };
}

export type Db = Kysely<Tables> | Transaction<Tables>;

/** A search hit as both databases return it (position -1: the title). */
export interface SearchRow {
  session_id: string;
  title: string | null;
  updated_at: Time;
  owner: string;
  owner_name: string | null;
  position: number | null;
  role: string | null;
  after_seq: number | null;
  snippet: string;
}

/** Most rows written in one statement (at most 9 parameters each: under SQLite's 32766 and PostgreSQL's 65535). */
export const BATCH_LIMIT = 1_000;

export const iso = (value: Time) => new Date(value).toISOString();
export const json = (value: unknown) => JSON.stringify(value);
/** Reads a JSON column: PostgreSQL's driver has parsed it already (a JSON string comes back as a string); SQLite's is text. */
export type JsonReader = <T>(value: unknown) => T;
const parsedByDriver: JsonReader = <T>(value: unknown) => value as T;
const parseText: JsonReader = <T>(value: unknown) => JSON.parse(value as string) as T;
/**
 * A token count to add to a run's total: a whole number from 0 to Number.MAX_SAFE_INTEGER, so that
 * totals (capped there too) read back as exact numbers.
 */
export const tokenCount = (value: number | undefined) =>
  value !== undefined && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), Number.MAX_SAFE_INTEGER) : 0;

/**
 * Where the two databases differ, in one place: the smaller of two numbers, how JSON reads back, and fenced writes
 * (leases live in PostgreSQL only: several instances need a shared server).
 */
export const DIALECTS: Record<SqlDialectName, { least: string; json: JsonReader }> = {
  sqlite: { least: 'min', json: parseText },
  postgres: { least: 'least', json: parsedByDriver },
};

export async function insertMessages(db: Db, rows: Tables['messages'][]): Promise<void> {
  for (let start = 0; start < rows.length; start += BATCH_LIMIT) {
    await db
      .insertInto('messages')
      .values(rows.slice(start, start + BATCH_LIMIT))
      .execute();
  }
}

export function toSession(row: Tables['sessions']): SessionRecord {
  return { id: row.id, title: row.title, createdAt: iso(row.created_at), updatedAt: iso(row.updated_at), owner: row.owner, ownerName: row.owner_name };
}

export function toShare(row: Tables['chat_shares']): ShareRecord {
  return {
    id: row.id,
    tokenHash: row.token_hash,
    sessionId: row.session_id,
    createdBy: row.created_by,
    atSeq: row.at_seq,
    includeFiles: Boolean(row.include_files),
    createdAt: iso(row.created_at),
    ...(row.expires_at === null ? {} : { expiresAt: iso(row.expires_at) }),
  };
}

export function toRun(row: Selectable<Tables['runs']>, parsed: JsonReader): RunRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    strategy: row.strategy,
    maxSteps: row.max_steps,
    status: row.status,
    endReason: row.end_reason ?? undefined,
    steps: row.steps ?? undefined,
    promptTokens: Number(row.prompt_tokens),
    completionTokens: Number(row.completion_tokens),
    afterSeq: row.after_seq ?? undefined,
    startedAt: iso(row.started_at),
    endedAt: row.ended_at ? iso(row.ended_at) : undefined,
    checkpoint: row.checkpoint === null || row.checkpoint === undefined ? undefined : parsed(row.checkpoint),
    spending: row.spending === null || row.spending === undefined ? undefined : parsed<RunRecord['spending']>(row.spending),
  };
}

export function toSnapshot(row: Omit<Tables['snapshots'], 'messages'>): Omit<SnapshotRecord, 'messages'> {
  return {
    id: row.id,
    sessionId: row.session_id,
    label: row.label,
    kind: row.kind,
    ...(row.run_id === null ? {} : { runId: row.run_id }),
    ...(row.step === null ? {} : { step: row.step }),
    atSeq: row.at_seq,
    createdAt: iso(row.created_at),
  };
}
