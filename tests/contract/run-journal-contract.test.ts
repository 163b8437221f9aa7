// The RunJournal port: a run's effects by position, read back in order, replaced at a position
// a replay left, cut from a position on, and kept apart per run. One suite over the journal the
// server builds on each store (memory, SQLite, PostgreSQL).
import { randomUUID } from 'node:crypto';
import { type JournalEntry, MemoryStore, openSqliteStore, openSqlStore, type RunJournal, type Store } from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';

interface JournalUnderTest {
  name: string;
  open(): Promise<{ store: Store; teardown: () => Promise<void> }>;
}

/** The journal as the container makes it over a store (backend/src/container.ts). */
const journalOf = (store: Store): RunJournal => ({
  read: (runId) => store.readJournal(runId),
  append: (runId, entry) => store.appendJournal(runId, entry),
  truncate: (runId, fromPosition) => store.truncateJournal(runId, fromPosition),
});

const pg = postgresUrl();
const adapters: JournalUnderTest[] = [
  { name: 'in memory', open: async () => ({ store: new MemoryStore(), teardown: async () => undefined }) },
  {
    name: 'on SQLite',
    open: async () => {
      const store = await openSqliteStore(':memory:');
      return { store, teardown: () => store.close() };
    },
  },
  ...(pg
    ? [
        {
          name: 'on PostgreSQL',
          open: async () => {
            const database = await freshPostgresDatabase(pg);
            const store = await openSqlStore(database.db);
            return { store, teardown: () => database.drop() };
          },
        },
      ]
    : []),
];

const entry = (position: number, value: unknown, kind = 'model', step = 1): JournalEntry => ({ position, kind, key: `${kind} ${position}`, value, step });

describe.each(adapters)('the run journal $name', (adapter) => {
  let store: Store;
  let journal: RunJournal;
  let teardown: () => Promise<void>;

  beforeAll(async () => {
    ({ store, teardown } = await adapter.open());
    journal = journalOf(store);
  }, 60_000);
  afterAll(() => teardown?.(), 60_000);

  async function newRun(): Promise<string> {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 3 });
    return runId;
  }

  it('reads back every entry in the order of its positions, values whole', async () => {
    const runId = await newRun();
    const value = { text: 'Ünïcode ✓ and "quotes"', calls: [{ id: 'c1', arguments: { n: 2 ** 40 } }], nothing: null };
    await journal.append(runId, entry(0, { question: 'What is 2+2?' }, 'input', 0));
    await journal.append(runId, entry(1, value));
    await journal.append(runId, entry(2, 'four', 'tool', 2));
    expect(await journal.read(runId)).toEqual([entry(0, { question: 'What is 2+2?' }, 'input', 0), entry(1, value), entry(2, 'four', 'tool', 2)]);
  });

  it('replaces the entry at a position written again (a replay that went another way there)', async () => {
    const runId = await newRun();
    await journal.append(runId, entry(0, 'first'));
    await journal.append(runId, entry(1, 'old'));
    await journal.append(runId, { position: 1, kind: 'tool', key: 'calculator c9', value: 'new', step: 2 });
    expect(await journal.read(runId)).toEqual([entry(0, 'first'), { position: 1, kind: 'tool', key: 'calculator c9', value: 'new', step: 2 }]);
  });

  it('cuts the journal from a position on, and takes new entries there', async () => {
    const runId = await newRun();
    for (let position = 0; position < 5; position++) await journal.append(runId, entry(position, position));
    await journal.truncate(runId, 2);
    expect((await journal.read(runId)).map((kept) => kept.position)).toEqual([0, 1]);
    await journal.append(runId, entry(2, 'after the cut'));
    expect((await journal.read(runId)).map((kept) => kept.value)).toEqual([0, 1, 'after the cut']);
    await journal.truncate(runId, 0);
    expect(await journal.read(runId)).toEqual([]);
  });

  it('commits entries with the events made beside them, and refuses only an event whose seq is taken', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 3 });
    const event = (seq: number) =>
      ({ type: 'agent_update', update_type: 'agent_turn_start', step: 1, seq, ts: new Date().toISOString(), run_id: runId }) as LoggedEvent;
    await store.appendEvent(sessionId, event(1));
    // Added in one turn: they go in one commit (one statement on PostgreSQL), the taken seq then alone.
    const settled = await Promise.allSettled([
      journal.append(runId, entry(0, 'input', 'input', 0)),
      store.appendEvent(sessionId, event(2)),
      journal.append(runId, entry(1, 'reply')),
      store.appendEvent(sessionId, event(1)),
      store.appendEvent(sessionId, event(3)),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(await journal.read(runId)).toEqual([entry(0, 'input', 'input', 0), entry(1, 'reply')]);
    expect((await store.listEvents(sessionId, 0)).map((stored) => stored.seq)).toEqual([1, 2, 3]);
    // Again with a group of other sizes, the first one's statement already known.
    await Promise.all([journal.append(runId, entry(2, 'tool', 'tool', 2)), store.appendEvent(sessionId, event(4))]);
    await Promise.all([journal.append(runId, entry(3, 'again')), store.appendEvent(sessionId, event(5)), store.appendEvent(sessionId, event(6))]);
    expect((await journal.read(runId)).map((kept) => kept.value)).toEqual(['input', 'reply', 'tool', 'again']);
    expect((await store.listEvents(sessionId, 0)).map((stored) => stored.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('keeps runs apart, also when they write at once', async () => {
    const runs = await Promise.all([newRun(), newRun(), newRun()]);
    await Promise.all(runs.flatMap((runId, index) => [0, 1, 2].map((position) => journal.append(runId, entry(position, `run ${index} #${position}`)))));
    await journal.truncate(runs[1]!, 1);
    expect((await journal.read(runs[0]!)).map((kept) => kept.value)).toEqual(['run 0 #0', 'run 0 #1', 'run 0 #2']);
    expect((await journal.read(runs[1]!)).map((kept) => kept.value)).toEqual(['run 1 #0']);
    expect((await journal.read(runs[2]!)).map((kept) => kept.value)).toEqual(['run 2 #0', 'run 2 #1', 'run 2 #2']);
    expect(await journal.read(randomUUID())).toEqual([]);
  });
});
