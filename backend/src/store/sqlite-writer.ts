import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteSync } from './sqlite-database.ts';

/** One statement as Kysely compiled it: its text and its values. */
export interface WriterStatement {
  sql: string;
  parameters: readonly unknown[];
}

/**
 * The group commits of events and journal entries, run on a thread of their own with a
 * connection of their own to the same database file: SQLite's synchronous API would otherwise
 * hold the thread that serves sockets and model calls for every commit (a third of a millisecond
 * per model call in a profile of the overhead task, more under load). With DB_SYNC=full this
 * connection syncs the log inside each commit, which holds up only this thread. A write resolves
 * once its transaction has committed (and, with DB_SYNC=full, reached the disk).
 */
export interface SqliteWriter {
  /** Runs `statements` in order, in one transaction when there are several; rejects with SQLite's error (nothing of it written). */
  write(statements: WriterStatement[]): Promise<void>;
  /** Waits for the writes under way, then closes the connection and ends the thread. */
  close(): Promise<void>;
}

/** How long a commit waits for the server's main connection's lock before it fails. */
const BUSY_TIMEOUT_MS = 5_000;

// The thread's code: CommonJS, given libsql's resolved path (nothing else of the server is loaded there).
const WRITER_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.libsql);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
const pragma = (source) => db.prepare('pragma ' + source).get([]);
pragma('synchronous = ' + workerData.sync);
pragma('foreign_keys = on');
const statements = new Map();
const prepared = (sql) => {
  let statement = statements.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    if (statements.size >= 256) statements.delete(statements.keys().next().value);
    statements.set(sql, statement);
  }
  return statement;
};
const begin = db.prepare('begin immediate');
const commit = db.prepare('commit');
const rollback = db.prepare('rollback');
parentPort.on('message', (message) => {
  if (message.close) {
    db.close();
    parentPort.close();
    return;
  }
  const { id, statements: batch } = message;
  const together = batch.length > 1;
  try {
    if (together) begin.run([]);
    for (const { sql, parameters } of batch) prepared(sql).run(parameters);
    if (together) commit.run([]);
    parentPort.postMessage({ id });
  } catch (error) {
    if (together && db.inTransaction) {
      try { rollback.run([]); } catch {}
    }
    parentPort.postMessage({ id, error: { message: String(error && error.message), code: error && error.code } });
  }
});
`;

/** Starts the writer thread for the database file at `path` (WAL mode already set by the main connection). */
export function startSqliteWriter(path: string, sync: SqliteSync): SqliteWriter {
  const libsql = createRequire(import.meta.url).resolve('libsql');
  const worker = new Worker(WRITER_THREAD, { eval: true, workerData: { libsql, path, sync, busyTimeoutMs: BUSY_TIMEOUT_MS } });
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let broken: Error | undefined;
  let exited: Promise<void> | undefined;
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // Idle, the thread does not keep the process alive; a write under way does.
  worker.unref();
  const failAll = (error: Error) => {
    broken ??= error;
    for (const { reject } of pending.values()) reject(broken);
    pending.clear();
  };
  worker.on('message', (message: { id: number; error?: { message: string; code?: string } }) => {
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (pending.size === 0) worker.unref();
    if (message.error) waiting.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
    else waiting.resolve();
  });
  worker.on('error', (error: Error) => failAll(new Error(`The database's writer thread failed (${error.message})`, { cause: error })));
  worker.on('exit', (code) => failAll(new Error(`The database's writer thread ended (exit code ${code})`)));
  return {
    write(statements) {
      if (broken) return Promise.reject(broken);
      const id = nextId++;
      return new Promise<void>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        if (pending.size === 1) worker.ref();
        worker.postMessage({ id, statements });
      });
    },
    close() {
      // The thread takes its messages in order: the writes sent before this one are done first.
      exited ??= (async () => {
        if (!broken) worker.postMessage({ close: true });
        worker.ref();
        await ended;
      })();
      return exited;
    },
  };
}
