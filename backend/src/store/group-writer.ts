import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Compilable, CompiledQuery } from 'kysely';
import { BATCH_LIMIT, type Db } from './sql-tables.ts';

/**
 * Group commit: rows that arrive while a write is in progress are written together in the next
 * commit, in the order they came, and each caller resumes once its own row is committed. A run
 * does not wait for each of its rows (see SessionEventLog and JournalReplay): a model call's journal
 * entry and its events go in one commit, while the next call is under way; and N sessions whose
 * model replies arrive together cost a few commits rather than N (each an fsync with DB_SYNC=full,
 * a round trip on PostgreSQL). Groups commit one after another, so once a row is committed every
 * row added before it is too (or was refused). A group starts two turns of the event loop after
 * its first row (see afterTheRequests): what the same I/O callbacks add (a model reply's journal
 * entry and the events that show it, other sessions' replies read in the same poll) joins it,
 * rather than the first row committing alone and the rest after it.
 */
export class GroupWriter<T> {
  private readonly pending: { row: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** The drain under way, if any: it writes until nothing is pending. */
  private writing: Promise<void> | undefined;

  /** `insert` writes the rows it may, and returns the errors of those it refused (by index), if any. */
  constructor(private readonly insert: (rows: T[]) => Promise<Map<number, Error> | undefined>) {}

  /** The last row added, settled (written or refused): rows settle in order. */
  private last: Promise<void> = Promise.resolve();

  add(row: T): Promise<void> {
    const added = new Promise<void>((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      this.writing ??= afterTheRequests().then(() => this.drain());
    });
    this.last = added.catch(() => undefined);
    return added;
  }

  /** Resolves once every row added so far is written (or refused); rows added meanwhile are not waited for. */
  async flush(): Promise<void> {
    await this.last;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, BATCH_LIMIT);
        const settle = (item: (typeof batch)[number], refused: Error | undefined) => (refused ? item.reject(refused) : item.resolve());
        try {
          const refused = await this.insert(batch.map((item) => item.row));
          for (const [index, item] of batch.entries()) settle(item, refused?.get(index));
        } catch (error) {
          // One bad row (a seq already taken) must fail only its own caller: retry one by one.
          // Not when the group was committed and only its sync to disk failed: then it fails whole.
          if (batch.length === 1 || (error as { committed?: boolean }).committed) for (const item of batch) item.reject(error);
          else for (const item of batch) await this.insert([item.row]).then((refused) => settle(item, refused?.get(0)), item.reject);
        }
      }
    } finally {
      // In the same turn as the last look at `pending`: a row added after it starts a new drain.
      this.writing = undefined;
    }
  }
}

/**
 * When a group starts its commit: two turns of the event loop (setImmediate) after its first row.
 * The first turn lets the rest of the I/O callbacks' rows join it. The second lets the model
 * request the run makes next leave first: undici writes a request on a reused keep-alive
 * connection in a setImmediate of its own (after checking that the server did not close it), queued
 * after the group's first. A commit is CPU on this thread (SQLite's page writes) or a round trip
 * (PostgreSQL); started after the request, it overlaps the model's answer instead of holding up
 * its question. Nothing waits on it that may not: events are sent, and a tool's start lets the
 * tool run, only once the group has committed.
 */
async function afterTheRequests(): Promise<void> {
  await nextTurn();
  await nextTurn();
}

/** Most insert texts kept (one per statement and row count). */
const COMPILED_LIMIT = 512;

/**
 * The hot inserts (every model call's events and journal entry) compiled by Kysely once per row
 * count, then run again with new values: building and compiling the same insert each time cost
 * more than SQLite's running it (0.24 ms of Kysely per model call in a profile of the overhead task).
 * The first compile of each shape checks that its parameters are the rows' values in order.
 */
export class CompiledInserts {
  private readonly texts = new Map<string, string>();

  async run(db: Db, name: string, rows: unknown[][], build: () => Compilable): Promise<void> {
    const key = `${name}:${rows.length}`;
    const parameters = rows.flat();
    const text = this.texts.get(key);
    if (text !== undefined) {
      await db.executeQuery(CompiledQuery.raw(text, parameters));
      return;
    }
    const compiled = build().compile();
    if (compiled.parameters.length !== parameters.length || compiled.parameters.some((value, index) => value !== parameters[index])) {
      throw new Error(`The ${name} insert does not take its rows' values in order`);
    }
    if (this.texts.size < COMPILED_LIMIT) this.texts.set(key, compiled.sql);
    await db.executeQuery(compiled);
  }
}
