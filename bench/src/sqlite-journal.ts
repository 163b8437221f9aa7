import Database from 'libsql';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * An embedded SQLite journal (libsql, the SQLite Stepwise's embedded store runs on) in a new
 * folder: WAL, synchronous=normal as Stepwise's default or full; `commit` writes one entry in a
 * transaction of its own. `db` is the connection, for a peer's own saver on the same SQLite.
 */
export function sqliteJournal(sync: 'normal' | 'full' = 'normal') {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-journal-'));
  const db = new Database(join(dir, 'journal.db'));
  db.prepare('pragma journal_mode = wal').get([]);
  db.prepare(`pragma synchronous = ${sync}`).get([]);
  db.exec('create table journal (run text not null, seq integer not null, entry text not null, primary key (run, seq))');
  const insert = db.prepare('insert into journal (run, seq, entry) values (?, ?, ?)');
  return {
    db,
    commit(run: string, seq: number, entry: unknown) {
      db.exec('begin');
      insert.run([run, seq, JSON.stringify(entry)]);
      db.exec('commit');
    },
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
