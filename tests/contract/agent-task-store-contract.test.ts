// The store's agent protocol tasks, one contract for every adapter: scoped by tenant and owner,
// replaced on save, listed newest first with filters and pages that neither skip nor repeat.
import { randomUUID } from 'node:crypto';
import { type AgentTaskRecord, MemoryStore, openSqlStore, type Store } from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { sqliteTestStores } from '../helpers/sqlite-stores.ts';

const url = postgresUrl();
const sqlite = sqliteTestStores('memory');
const adapters: { name: string; open: () => Promise<{ store: Store; close: () => Promise<void> }> }[] = [
  { name: 'memory', open: async () => ({ store: new MemoryStore(), close: async () => undefined }) },
  { name: 'SQLite', open: async () => ({ store: await sqlite.open(), close: () => sqlite.teardown() }) },
  ...(url
    ? [
        {
          name: 'PostgreSQL',
          open: async () => {
            const database = await freshPostgresDatabase(url);
            const store = await openSqlStore(database.db);
            return { store, close: async () => database.drop() };
          },
        },
      ]
    : []),
];

describe.each(adapters)('agent tasks on $name', (adapter) => {
  let store: Store;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ store, close } = await adapter.open());
  });
  afterAll(() => close());

  const task = (owner: string, id: string, fields: Partial<AgentTaskRecord> = {}): AgentTaskRecord => ({
    tenant: '',
    owner,
    id,
    contextId: 'c1',
    state: 'TASK_STATE_WORKING',
    updatedAt: 1_000,
    document: { id, status: { state: 'TASK_STATE_WORKING' }, history: [{ text: 'Plan my trip' }] },
    ...fields,
  });

  it('keeps a task for its owner alone, and a save replaces it', async () => {
    const owner = randomUUID();
    await store.agentTasks.save(task(owner, 't1'));
    await store.agentTasks.save(task(owner, 't1', { state: 'TASK_STATE_INPUT_REQUIRED', updatedAt: 2_000, document: { id: 't1', asked: 'Which city?' } }));
    expect(await store.agentTasks.load('', owner, 't1')).toEqual(
      task(owner, 't1', { state: 'TASK_STATE_INPUT_REQUIRED', updatedAt: 2_000, document: { id: 't1', asked: 'Which city?' } }),
    );
    expect(await store.agentTasks.load('', randomUUID(), 't1')).toBeUndefined();
    expect(await store.agentTasks.load('other-tenant', owner, 't1')).toBeUndefined();
  });

  it('lists an owner’s tasks newest first, filtered, in pages that follow one another', async () => {
    const owner = randomUUID();
    const times = { a: 3_000, b: 5_000, c: 5_000, d: 1_000, e: 4_000 };
    for (const [id, updatedAt] of Object.entries(times)) await store.agentTasks.save(task(owner, id, { updatedAt, contextId: id === 'e' ? 'c2' : 'c1' }));
    await store.agentTasks.save(task(randomUUID(), 'x'));
    const ids = (records: AgentTaskRecord[]) => records.map((record) => record.id);

    const first = await store.agentTasks.list('', owner, { limit: 2 });
    expect({ ids: ids(first.tasks), total: first.total }).toEqual({ ids: ['c', 'b'], total: 5 });
    const last = first.tasks.at(-1)!;
    const second = await store.agentTasks.list('', owner, { limit: 2, after: { updatedAt: last.updatedAt, id: last.id } });
    expect({ ids: ids(second.tasks), total: second.total }).toEqual({ ids: ['e', 'a'], total: 5 });
    expect(ids((await store.agentTasks.list('', owner, { limit: 10, contextId: 'c2' })).tasks)).toEqual(['e']);
    expect(ids((await store.agentTasks.list('', owner, { limit: 10, updatedAfter: 3_000 })).tasks)).toEqual(['c', 'b', 'e']);
    expect((await store.agentTasks.list('', owner, { limit: 10, state: 'TASK_STATE_COMPLETED' })).total).toBe(0);
  });
});
