import type { LoggedEvent } from '@stepwise/shared-types';
import { type Kysely, type QueryCreator, type RawBuilder, sql } from 'kysely';
import { CompiledInserts, GroupWriter } from './group-writer.ts';
import type { SqlDialectName } from './migrations.ts';
import { type Db, json, type Tables } from './sql-tables.ts';
import type { GroupSync } from './sqlite-database.ts';
import { type FenceToken, type JournalEntry, StaleLeaseError } from './store.ts';

/** A row to write, with the lease it was made under (looked up when it is added, not when its group is written). */
type EventWrite = { sessionId: string; event: LoggedEvent; token: FenceToken | undefined };
type JournalWrite = { runId: string; entry: JournalEntry; token: FenceToken | undefined };
type Write = EventWrite | JournalWrite;

/** Event rows as the table takes them, and their values in column order. */
const eventValues = (rows: EventWrite[]): Tables['events'][] =>
  rows.map(({ sessionId, event }) => ({ session_id: sessionId, seq: event.seq, run_id: event.run_id ?? null, payload: json(event) }));
const eventParameters = (row: Tables['events']) => [row.session_id, row.seq, row.run_id, row.payload];

/** Journal rows as the table takes them, and their values in column order. */
const journalValues = (rows: JournalWrite[]): Tables['run_journal'][] =>
  rows.map(({ runId, entry }) => ({
    run_id: runId,
    position: entry.position,
    kind: entry.kind,
    key: entry.key,
    value: json(entry.value ?? null),
    step: entry.step ?? 0,
  }));
const journalParameters = (row: Tables['run_journal']) => [row.run_id, row.position, row.kind, row.key, row.value, row.step];

/** The journal's insert: an entry written again at its position (a truncated past re-recorded) replaces it. */
function journalInsert(creator: Pick<QueryCreator<Tables>, 'insertInto'>, values: Tables['run_journal'][]) {
  return creator
    .insertInto('run_journal')
    .values(values)
    .onConflict((conflict) =>
      conflict.columns(['run_id', 'position']).doUpdateSet((row) => ({
        kind: row.ref('excluded.kind'),
        key: row.ref('excluded.key'),
        value: row.ref('excluded.value'),
        step: row.ref('excluded.step'),
      })),
    );
}

/** The rows `missing` says were not written, each refused with StaleLeaseError. */
function refusals<T>(rows: T[], missing: (row: T) => boolean, sessionOf: (row: T, index: number) => string): Map<number, Error> | undefined {
  const refused = new Map<number, Error>();
  for (const [index, row] of rows.entries()) if (missing(row)) refused.set(index, new StaleLeaseError(sessionOf(row, index)));
  return refused.size > 0 ? refused : undefined;
}

/**
 * A fenced row is written only while its lease (session, instance, generation) is the session's;
 * a row without one (no lease held: a file saved between runs) is written as before. PostgreSQL only.
 */
const FENCED = sql`(v.instance_id is null or exists (
  select 1 from session_leases l where l.session_id = v.session_id::text and l.instance_id = v.instance_id and l.generation = v.generation for share))`;

/** Typed VALUES rows (`($1::uuid, $2::integer), …`): a VALUES list read by a select has no column types of its own. */
const typedValues = (rows: unknown[][], types: string[]): RawBuilder<unknown> =>
  sql.join(rows.map((row) => sql`(${sql.join(row.map((value, column) => sql`${value}::${sql.raw(types[column]!)}`))})`));

/**
 * Events and journal entries as the store writes them: many sessions' at once, in group commits
 * (GroupWriter), fenced by their leases where several instances share the database.
 */
export class SqlLogWrites {
  private readonly inserts = new CompiledInserts();

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: SqlDialectName,
    /** How group commits reach the disk, when not left to the database (SQLite with DB_SYNC=full). */
    private readonly groupSync: GroupSync | undefined,
  ) {}

  /** Events of many sessions at once go in one commit, with the journal entries made before them (see GroupWriter). */
  appendEvent(sessionId: string, event: LoggedEvent, token: FenceToken | undefined): Promise<void> {
    return this.writes.add({ sessionId, event, token });
  }

  /** Journal entries of many runs at once go in one commit, with the events made after them (see GroupWriter). */
  appendJournal(runId: string, entry: JournalEntry, token: FenceToken | undefined): Promise<void> {
    return this.writes.add({ runId, entry, token });
  }

  /** Resolves once every row added so far is written (or refused). */
  flush(): Promise<void> {
    return this.writes.flush();
  }

  /** Deletes a run's journal from `fromPosition` on, after the entries appended before (under its lease, when it has one). */
  async truncateJournal(runId: string, fromPosition: number, token: FenceToken | undefined): Promise<void> {
    await this.writes.flush();
    if (!token) {
      await this.db.deleteFrom('run_journal').where('run_id', '=', runId).where('position', '>=', fromPosition).execute();
      return;
    }
    const { rows } = await sql<{ held: boolean }>`
      with lease as (select 1 from session_leases l where l.session_id = ${token.sessionId} and l.instance_id = ${token.instanceId} and l.generation = ${token.generation} for share)
      , gone as (delete from run_journal where run_id = ${runId} and position >= ${fromPosition} and exists (select 1 from lease))
      select exists (select 1 from lease) as held`.execute(this.db);
    if (!rows[0]?.held) throw new StaleLeaseError(token.sessionId);
  }

  /**
   * Events and journal entries, of every session, in the order they were made: each group is one
   * transaction, so an event is never committed without the journal entry made before it (a model
   * call's result with the events that show it).
   */
  private readonly writes = new GroupWriter<Write>(async (rows) => {
    const events = rows.flatMap((row, index) => ('event' in row ? [{ row, index }] : []));
    const entries = rows.flatMap((row, index) => ('entry' in row ? [{ row, index }] : []));
    const write = async (db: Db) => {
      const refusedEvents = events.length
        ? await this.insertEvents(
            db,
            events.map(({ row }) => row),
          )
        : undefined;
      const refusedEntries = entries.length
        ? await this.insertJournal(
            db,
            entries.map(({ row }) => row),
          )
        : undefined;
      if (!refusedEvents && !refusedEntries) return undefined;
      const refused = new Map<number, Error>();
      for (const [at, error] of refusedEvents ?? []) refused.set(events[at]!.index, error);
      for (const [at, error] of refusedEntries ?? []) refused.set(entries[at]!.index, error);
      return refused;
    };
    const both = events.length > 0 && entries.length > 0;
    if (both && this.dialect === 'postgres' && rows.every((row) => row.token === undefined)) {
      // One statement, atomic of itself: one round trip to the server instead of four (begin, two inserts, commit).
      return this.insertTogether(
        this.db,
        events.map(({ row }) => row as EventWrite),
        entries.map(({ row }) => row as JournalWrite),
      );
    }
    const commit = (db: Kysely<Tables>) => (both ? db.transaction().execute(write) : write(db));
    return this.groupSync ? this.groupSync.write(this.db, commit) : commit(this.db);
  });

  private async insertEvents(db: Db, rows: EventWrite[]): Promise<Map<number, Error> | undefined> {
    const tokens = rows.map(({ token }) => token);
    const values = eventValues(rows);
    if (tokens.every((token) => token === undefined)) {
      await this.inserts.run(db, 'events', values.map(eventParameters), () => db.insertInto('events').values(values));
      return undefined;
    }
    return this.fencedEvents(db, values, tokens);
  }

  /** Events and journal entries without leases in one statement (PostgreSQL: an insert in a WITH runs whole). */
  private async insertTogether(db: Db, events: EventWrite[], entries: JournalWrite[]): Promise<undefined> {
    const eventRows = eventValues(events);
    const entryRows = journalValues(entries);
    const parameters = [...eventRows.map(eventParameters), ...entryRows.map(journalParameters)];
    await this.inserts.run(db, `events+run_journal:${eventRows.length}`, parameters, () =>
      journalInsert(
        db.with('written_events', (creator) => creator.insertInto('events').values(eventRows)),
        entryRows,
      ),
    );
    return undefined;
  }

  /** Events written only under their leases (PostgreSQL); the refused ones by index. */
  private async fencedEvents(db: Db, values: Tables['events'][], tokens: (FenceToken | undefined)[]): Promise<Map<number, Error> | undefined> {
    const rows = values.map((row, index) => [
      row.session_id,
      row.seq,
      row.run_id,
      row.payload,
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const { rows: written } = await sql<{ session_id: string; seq: number }>`
      insert into events (session_id, seq, run_id, payload)
      select v.session_id, v.seq, v.run_id, v.payload
      from (values ${typedValues(rows, ['uuid', 'integer', 'uuid', 'json', 'text', 'bigint'])}) as v (session_id, seq, run_id, payload, instance_id, generation)
      where ${FENCED}
      returning session_id, seq`.execute(db);
    const done = new Set(written.map((row) => `${row.session_id}:${row.seq}`));
    return refusals(
      values,
      (row) => !done.has(`${row.session_id}:${row.seq}`),
      (row) => row.session_id,
    );
  }

  private async insertJournal(db: Db, rows: JournalWrite[]): Promise<Map<number, Error> | undefined> {
    const tokens = rows.map(({ token }) => token);
    const values = journalValues(rows);
    if (tokens.every((token) => token === undefined)) {
      // Two rows for one position in one statement fail it on PostgreSQL; GroupWriter then writes them one by one, in order.
      await this.inserts.run(db, 'run_journal', values.map(journalParameters), () => journalInsert(db, values));
      return undefined;
    }
    return this.fencedJournal(db, values, tokens);
  }

  /** Journal entries written only under their leases (PostgreSQL); the refused ones by index. */
  private async fencedJournal(db: Db, values: Tables['run_journal'][], tokens: (FenceToken | undefined)[]): Promise<Map<number, Error> | undefined> {
    const rows = values.map((row, index) => [
      row.run_id,
      row.position,
      row.kind,
      row.key,
      row.value,
      row.step,
      tokens[index]?.sessionId ?? null,
      tokens[index]?.instanceId ?? null,
      tokens[index]?.generation ?? null,
    ]);
    const { rows: written } = await sql<{ run_id: string; position: number }>`
      insert into run_journal (run_id, position, kind, key, value, step)
      select v.run_id, v.position, v.kind, v.key, v.value, v.step
      from (values ${typedValues(rows, ['uuid', 'integer', 'text', 'text', 'json', 'integer', 'text', 'text', 'bigint'])})
        as v (run_id, position, kind, key, value, step, session_id, instance_id, generation)
      where ${FENCED}
      on conflict (run_id, position) do update set kind = excluded.kind, key = excluded.key, value = excluded.value, step = excluded.step
      returning run_id, position`.execute(db);
    const done = new Set(written.map((row) => `${row.run_id}:${row.position}`));
    return refusals(
      values,
      (row) => !done.has(`${row.run_id}:${row.position}`),
      (_row, index) => tokens[index]!.sessionId,
    );
  }
}
