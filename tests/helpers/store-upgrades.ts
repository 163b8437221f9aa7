import { randomUUID } from 'node:crypto';
import { SCHEMA, type SqlStore } from '@stepwise/backend';
import { expect } from 'vitest';

type SchemaStep = (typeof SCHEMA)[number];

/**
 * A chat written by a release before search (a store of the schema's steps up to 0011) is found
 * by search once the current store has opened the same database: `openOld` opens it with only
 * those steps, `openCurrent` with them all (and keeps it to close).
 */
export async function expectSearchIndexedOnUpgrade(openOld: (steps: SchemaStep[]) => Promise<SqlStore>, openCurrent: () => Promise<SqlStore>): Promise<void> {
  const sessionId = randomUUID();
  const searchStep = SCHEMA.findIndex((step) => step.name.startsWith('0011 '));
  const old = await openOld(SCHEMA.slice(0, searchStep));
  await old.createSession(sessionId, { id: 'alice' });
  await old.appendMessages(sessionId, [{ role: 'user', content: 'Name a fjord' }], 0);
  await old.appendMessages(sessionId, [{ role: 'assistant', content: 'Geirangerfjord, in Norway.' }], 3);
  await old.close();
  const store = await openCurrent();
  expect(store.migrated).toEqual(SCHEMA.slice(searchStep).map((step) => step.name));
  expect((await store.searchSessions({ terms: ['geirangerfjord'], owner: 'alice', limit: 5 })).map((hit) => [hit.sessionId, hit.message?.role])).toEqual([
    [sessionId, 'assistant'],
  ]);
  expect((await store.searchSessions({ terms: ['fjord'], owner: 'alice', limit: 5 })).map((hit) => hit.message?.position ?? 'title').sort()).toEqual([
    0,
    'title',
  ]);
}
