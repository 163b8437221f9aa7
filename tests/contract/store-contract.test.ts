import { randomUUID } from 'node:crypto';
import {
  HIGHLIGHT_END,
  HIGHLIGHT_START,
  LOCAL_OWNER,
  MemoryStore,
  openSqlStore,
  PostgresDatabase,
  SCHEMA,
  type SchemaStep,
  type Store,
} from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { sqliteTestStores } from '../helpers/sqlite-stores.ts';
import { expectSearchIndexedOnUpgrade } from '../helpers/store-upgrades.ts';

interface Adapter {
  name: string;
  /** A store over an empty database. */
  open: () => Promise<Store>;
  teardown: () => Promise<void>;
}

function sqlAdapter(name: string, create: () => Promise<{ db: PostgresDatabase; drop?: () => Promise<void> }>): Adapter {
  let db: PostgresDatabase | undefined;
  let drop: (() => Promise<void>) | undefined;
  let store: Store | undefined;
  return {
    name,
    async open() {
      if (!db) {
        ({ db, drop } = await create());
        store = await openSqlStore(db);
      }
      await db.exec('truncate sessions cascade');
      return store!;
    },
    async teardown() {
      if (drop) await drop();
      else await db?.close();
    },
  };
}

const url = postgresUrl();
const adapters: Adapter[] = [
  { name: 'memory', open: async () => new MemoryStore(), teardown: async () => undefined },
  { name: 'SQLite in a file', ...sqliteTestStores('file') },
  { name: 'SQLite in memory', ...sqliteTestStores('memory') },
  ...(url ? [sqlAdapter('PostgreSQL server', () => freshPostgresDatabase(url))] : []),
];

const event = (seq: number, fields: Record<string, unknown> = {}): LoggedEvent =>
  ({ type: 'agent_update', update_type: 'agent_turn_start', step: seq, seq, ts: new Date().toISOString(), run_id: randomUUID(), ...fields }) as LoggedEvent;

describe.each(adapters)('the store on $name', (adapter) => {
  let store: Store;

  beforeAll(async () => {
    store = await adapter.open();
  });
  beforeEach(async () => {
    store = await adapter.open();
  });
  afterAll(() => adapter.teardown());

  it('keeps a notification’s delivery until it is made: one holder at a time, a lapsed claim taken over, a retry due later', async () => {
    const [d1, d2, d3] = [randomUUID(), randomUUID(), randomUUID()] as [string, string, string];
    const ours = (rows: { id: string }[]) =>
      rows
        .map((row) => row.id)
        .filter((id) => [d1, d2, d3].includes(id))
        .sort();
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    await store.outbox.add({ id: d1, target: 'http://127.0.0.1:9/hook', payload: '{"type":"run_finished"}' });
    await store.outbox.add({ id: d2, target: 'http://127.0.0.1:9/hook', payload: '{}' });
    await store.outbox.add({ id: d1, target: 'http://127.0.0.1:9/other', payload: '{}' });
    const claimed = await store.outbox.claimDue('a', at(0), at(60_000), 10);
    expect(ours(claimed)).toEqual([d1, d2].sort());
    expect(claimed.find((row) => row.id === d1)).toMatchObject({ target: 'http://127.0.0.1:9/hook', payload: '{"type":"run_finished"}', attempts: 0 });
    expect(ours(await store.outbox.claimDue('b', at(0), at(60_000), 10))).toEqual([]);
    await store.outbox.settle(d1, 'a', { kind: 'retry', at: at(3_600_000), error: '500' });
    await store.outbox.settle(d2, 'a', { kind: 'delivered' });
    expect(ours(await store.outbox.claimDue('b', at(2_000), at(62_000), 10))).toEqual([]);
    const retried = await store.outbox.claimDue('b', at(7_200_000), at(7_260_000), 10);
    expect(retried.filter((row) => row.id === d1).map((row) => row.attempts)).toEqual([1]);
    // b's claim lapses unsettled (its instance died): c takes it over, and b's late word is not taken.
    expect(ours(await store.outbox.claimDue('c', at(7_261_000), at(7_321_000), 10))).toEqual([d1]);
    await store.outbox.settle(d1, 'b', { kind: 'delivered' });
    await store.outbox.settle(d1, 'c', { kind: 'given_up', error: '410 Gone' });
    expect(ours(await store.outbox.claimDue('d', at(9_000_000), at(9_060_000), 10))).toEqual([]);
    // A claim left by a process that died is let go at the next start of a store it had alone.
    await store.outbox.add({ id: d3, target: 'http://127.0.0.1:9/hook', payload: '{}' });
    expect(ours(await store.outbox.claimDue('x', at(1_000), at(60_000), 10))).toEqual([d3]);
    await store.outbox.releaseHolds();
    expect(ours(await store.outbox.claimDue('y', at(1_000), at(60_000), 10))).toEqual([d3]);
  });

  it('creates and reads sessions, titled by their first user message', async () => {
    const id = randomUUID();
    const created = await store.createSession(id);
    expect(created).toMatchObject({ id, title: null });
    await store.appendMessages(id, [{ role: 'user', content: '  What is\n(17+25)*3?  ' }], 0);
    await store.appendMessages(id, [{ role: 'user', content: 'second' }], 3);
    const session = await store.getSession(id);
    expect(session?.title).toBe('What is (17+25)*3?');
    expect(Date.parse(session!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
    expect(await store.getSession(randomUUID())).toBeUndefined();
  });

  it('renames a session: the new title stays, whatever messages come after', async () => {
    const id = randomUUID();
    await store.createSession(id);
    await store.appendMessages(id, [{ role: 'user', content: 'first words' }], 0);
    expect(await store.renameSession(id, 'My chat')).toMatchObject({ id, title: 'My chat' });
    await store.appendMessages(id, [{ role: 'user', content: 'more words' }], 5);
    expect((await store.getSession(id))?.title).toBe('My chat');
    expect(await store.renameSession(randomUUID(), 'nobody')).toBeUndefined();
  });

  it("reads a session's history back from its end a page at a time, oldest first within a page, after rewinds too", async () => {
    const id = randomUUID();
    await store.createSession(id);
    const texts = Array.from({ length: 7 }, (_, index) => `m${index}`);
    await store.appendMessages(
      id,
      texts.slice(0, 4).map((content) => ({ role: 'user' as const, content })),
      1,
    );
    await store.appendMessages(
      id,
      texts.slice(4).map((content) => ({ role: 'assistant' as const, content })),
      3,
    );
    const read = async (limit: number) => {
      const pages: string[][] = [];
      let olderThan: number | undefined;
      do {
        const page = await store.listLatestMessages(id, limit, olderThan);
        pages.push(page.messages.map((record) => record.message.content ?? ''));
        olderThan = page.olderThan;
      } while (olderThan !== undefined);
      return pages;
    };
    expect(await read(3)).toEqual([['m4', 'm5', 'm6'], ['m1', 'm2', 'm3'], ['m0']]);
    expect(await read(7)).toEqual([texts, []]);
    expect(await read(8)).toEqual([texts]);
    expect((await store.listLatestMessages(id, 2)).messages).toEqual([
      { message: { role: 'assistant', content: 'm5' }, afterSeq: 3 },
      { message: { role: 'assistant', content: 'm6' }, afterSeq: 3 },
    ]);
    await store.replaceMessages(id, (await store.listMessages(id)).slice(0, 2));
    await store.appendMessages(id, [{ role: 'user', content: 'after the rewind' }], 9);
    expect(await read(2)).toEqual([['m1', 'after the rewind'], ['m0']]);
  });

  it('keeps every kind of message in order, with the seq it was accepted at', async () => {
    const id = randomUUID();
    await store.createSession(id);
    await store.appendMessages(id, [{ role: 'user', content: 'q' }], 0);
    await store.appendMessages(
      id,
      [
        { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] },
        { role: 'tool', toolCallId: 'c1', content: '2' },
        { role: 'assistant', content: 'It is 2 — “ünïcödé” ✓' },
      ],
      7,
    );
    expect(await store.listMessages(id)).toEqual([
      { message: { role: 'user', content: 'q' }, afterSeq: 0 },
      {
        message: { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] },
        afterSeq: 7,
      },
      { message: { role: 'tool', toolCallId: 'c1', content: '2' }, afterSeq: 7 },
      { message: { role: 'assistant', content: 'It is 2 — “ünïcödé” ✓' }, afterSeq: 7 },
    ]);
  });

  it('appends and replays the event log after a seq, exactly as written', async () => {
    const id = randomUUID();
    await store.createSession(id);
    const events = [1, 2, 3, 4].map((seq) => event(seq, { nested: { list: [1, 'two', null], ok: true } }));
    for (const logged of events) await store.appendEvent(id, logged);
    expect(await store.lastSeq(id)).toBe(4);
    expect(await store.listEvents(id, 0)).toEqual(events);
    expect(await store.listEvents(id, 2)).toEqual(events.slice(2));
    expect(await store.listEvents(id, 4)).toEqual([]);
    expect(await store.lastSeq(randomUUID())).toBe(0);
  });

  it('pages through the event log: at most `limit` events after a seq, the first ones, in order', async () => {
    const id = randomUUID();
    const other = randomUUID();
    await store.createSession(id);
    await store.createSession(other);
    const events = Array.from({ length: 12 }, (_, index) => event(index + 1));
    for (const logged of events) await store.appendEvent(id, logged);
    await store.appendEvent(other, event(1));
    expect(await store.listEvents(id, 0, 5)).toEqual(events.slice(0, 5));
    expect(await store.listEvents(id, 5, 5)).toEqual(events.slice(5, 10));
    expect(await store.listEvents(id, 10, 5)).toEqual(events.slice(10));
    expect(await store.listEvents(id, 12, 5)).toEqual([]);
    expect(await store.listEvents(id, 3, 1)).toEqual([events[3]]);
    // Paging with any page size gives back the whole log, each event once.
    const paged: LoggedEvent[] = [];
    for (let page = await store.listEvents(id, 0, 4); page.length > 0; page = await store.listEvents(id, page.at(-1)!.seq, 4)) {
      paged.push(...page);
    }
    expect(paged).toEqual(events);
    expect(await store.listEvents(randomUUID(), 0, 5)).toEqual([]);
  });

  it('writes events of many sessions at once, each committed when its call resolves', async () => {
    const ids = Array.from({ length: 30 }, () => randomUUID());
    for (const id of ids) await store.createSession(id);
    await Promise.all(ids.flatMap((id) => [store.appendEvent(id, event(1))]));
    const second = await Promise.allSettled(ids.map((id, index) => store.appendEvent(id, event(index === 7 ? 1 : 2))));
    expect(second.filter((result) => result.status === 'rejected')).toHaveLength(1);
    expect(second[7]!.status).toBe('rejected');
    for (const [index, id] of ids.entries()) expect(await store.lastSeq(id)).toBe(index === 7 ? 1 : 2);
  });

  it('ends a run as the session’s last activity', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    await store.createSession(a);
    await store.createSession(b);
    const runId = randomUUID();
    await store.createRun({ id: runId, sessionId: a, strategy: 'roa', maxSteps: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.finishRun(runId, { status: 'completed' });
    expect((await store.listSessions(2)).map((session) => session.id)).toEqual([a, b]);
  });

  it('refuses a seq that is already taken', async () => {
    const id = randomUUID();
    await store.createSession(id);
    await store.appendEvent(id, event(1));
    await expect(store.appendEvent(id, event(1))).rejects.toThrow();
    expect(await store.listEvents(id, 0)).toHaveLength(1);
  });

  it('keeps each session’s log apart', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    await store.createSession(a);
    await store.createSession(b);
    await store.appendEvent(a, event(1));
    await store.appendEvent(b, event(1));
    await store.appendEvent(b, event(2));
    expect(await store.lastSeq(a)).toBe(1);
    expect((await store.listEvents(b, 0)).map((logged) => logged.seq)).toEqual([1, 2]);
  });

  it('records runs from start to end, with token usage', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 5 });
    expect(await store.getRun(runId)).toMatchObject({ id: runId, sessionId, strategy: 'roa', maxSteps: 5, status: 'running', promptTokens: 0 });
    expect((await store.listRunningRuns()).map((run) => run.id)).toEqual([runId]);
    await store.finishRun(runId, { status: 'completed', steps: 3, usage: { promptTokens: 120, completionTokens: 30 } });
    const run = await store.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', steps: 3, promptTokens: 120, completionTokens: 30 });
    expect(run?.endedAt).toBeDefined();
    expect(await store.listRunningRuns()).toEqual([]);
  });

  it('keeps token counts past 32 bits as numbers, and where a run began in the log', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'chat', maxSteps: 0, afterSeq: 7 });
    await store.finishRun(runId, { status: 'completed', usage: { promptTokens: 3_000_000_000, completionTokens: 2 ** 40 } });
    expect(await store.getRun(runId)).toMatchObject({ status: 'completed', promptTokens: 3_000_000_000, completionTokens: 2 ** 40, afterSeq: 7 });
  });

  it("keeps a run's cached and reasoning tokens and its cost, null when unknown", async () => {
    const sessionId = randomUUID();
    const [priced, unpriced, older] = [randomUUID(), randomUUID(), randomUUID()];
    await store.createSession(sessionId);
    for (const id of [priced, unpriced, older]) await store.createRun({ id, sessionId, strategy: 'roa', maxSteps: 5 });
    await store.finishRun(priced, {
      status: 'completed',
      usage: { promptTokens: 10, completionTokens: 5 },
      spending: { cachedTokens: 4, reasoningTokens: 2, costUsd: 0.000123 },
    });
    await store.finishRun(unpriced, { status: 'failed', spending: { cachedTokens: 0, reasoningTokens: 0, costUsd: null } });
    await store.finishRun(older, { status: 'completed' });
    expect((await store.getRun(priced))?.spending).toEqual({ cachedTokens: 4, reasoningTokens: 2, costUsd: 0.000123 });
    expect((await store.getRun(unpriced))?.spending).toEqual({ cachedTokens: 0, reasoningTokens: 0, costUsd: null });
    expect((await store.getRun(older))?.spending).toBeUndefined();
  });

  it('saves and clears a run’s checkpoint', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 5 });
    const checkpoint = { input: { question: 'q', history: [] }, state: { step: 2, deadline: '2030-01-01T00:00:00.000Z' } };
    await store.saveCheckpoint(runId, checkpoint);
    expect((await store.listRunningRuns())[0]?.checkpoint).toEqual(checkpoint);
    await store.saveCheckpoint(runId, null);
    expect((await store.getRun(runId))?.checkpoint).toBeUndefined();
  });

  it('parks a running run with what it waits on, and sets it running again once', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 5 });
    const parked = { questions: ['q_1'], step: 1, transcript: [] };
    await store.parkRun(runId, parked);
    expect(await store.getRun(runId)).toMatchObject({ status: 'parked', checkpoint: parked });
    expect(await store.lastRun(sessionId)).toMatchObject({ id: runId, status: 'parked' });
    expect((await store.listRunningRuns()).map((run) => run.id)).not.toContain(runId);
    expect(await store.unparkRun(runId)).toEqual({ checkpoint: parked });
    expect(await store.unparkRun(runId)).toBeUndefined();
    expect((await store.getRun(runId))?.status).toBe('running');
  });

  it('keeps a run’s journal by position: replaces at a position, truncates from one, and goes with its session', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 5 });
    const result = {
      text: 'Plan: add.',
      toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }],
      usage: { promptTokens: 3, completionTokens: 4 },
    };
    await store.appendJournal(runId, { position: 0, kind: 'input', key: 'input', value: { question: 'q', history: [] }, step: 0 });
    await store.appendJournal(runId, { position: 1, kind: 'model', key: 'roa.reason', value: result, step: 1 });
    await store.appendJournal(runId, { position: 2, kind: 'tool', key: 'calculator:c1', value: { ok: true, content: '2' }, step: 1 });
    expect(await store.readJournal(runId)).toEqual([
      { position: 0, kind: 'input', key: 'input', value: { question: 'q', history: [] }, step: 0 },
      { position: 1, kind: 'model', key: 'roa.reason', value: result, step: 1 },
      { position: 2, kind: 'tool', key: 'calculator:c1', value: { ok: true, content: '2' }, step: 1 },
    ]);
    await store.appendJournal(runId, { position: 2, kind: 'model', key: 'roa.observe', value: { text: 'Two.' } });
    expect((await store.readJournal(runId)).map((entry) => entry.key)).toEqual(['input', 'roa.reason', 'roa.observe']);
    await store.truncateJournal(runId, 1);
    expect((await store.readJournal(runId)).map((entry) => entry.key)).toEqual(['input']);
    expect(await store.readJournal(randomUUID())).toEqual([]);
    await store.deleteSession(sessionId);
    expect(await store.readJournal(runId)).toEqual([]);
  });

  it('keeps snapshots of a session’s history, lists them without their messages, and replaces the history in one go', async () => {
    const sessionId = randomUUID();
    await store.createSession(sessionId);
    await store.appendMessages(
      sessionId,
      [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'one' },
      ],
      2,
    );
    const messages = await store.listMessages(sessionId);
    const id = randomUUID();
    const saved = await store.saveSnapshot({ id, sessionId, label: 'Before', kind: 'manual', atSeq: 2, messages });
    expect(saved.createdAt).toEqual(expect.any(String));
    await store.appendMessages(sessionId, [{ role: 'user', content: 'second' }], 5);
    expect(await store.listSnapshots(sessionId)).toEqual([{ id, sessionId, label: 'Before', kind: 'manual', atSeq: 2, createdAt: saved.createdAt }]);
    expect((await store.getSnapshot(id))?.messages).toEqual(messages);

    await store.replaceMessages(sessionId, (await store.getSnapshot(id))!.messages);
    expect(await store.listMessages(sessionId)).toEqual(messages);
    await store.appendMessages(sessionId, [{ role: 'user', content: 'third' }], 9);
    expect((await store.listMessages(sessionId)).map((record) => record.message.content)).toEqual(['first', 'one', 'third']);
    expect(await store.getSnapshot(randomUUID())).toBeUndefined();
    await store.deleteSession(sessionId);
    expect(await store.getSnapshot(id)).toBeUndefined();
    expect(await store.listSnapshots(sessionId)).toEqual([]);
  });

  it('lists a session’s runs oldest first', async () => {
    const sessionId = randomUUID();
    await store.createSession(sessionId);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) await store.createRun({ id, sessionId, strategy: 'roa', maxSteps: 1 });
    expect((await store.listRuns(sessionId)).map((run) => run.id).sort()).toEqual([...ids].sort());
  });

  it('lists sessions by last activity, newest first', async () => {
    const [older, newer] = [randomUUID(), randomUUID()];
    await store.createSession(older);
    await store.createSession(newer);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.appendMessages(older, [{ role: 'user', content: 'again' }], 0);
    const listed = (await store.listSessions(10)).map((session) => session.id);
    expect(listed.indexOf(older)).toBeLessThan(listed.indexOf(newer));
    expect(await store.listSessions(1)).toHaveLength(1);
  });

  it('gives every session an owner, the local user unless told, and lists one owner’s sessions or everyone’s', async () => {
    const local = randomUUID();
    const alices = randomUUID();
    const bobs = randomUUID();
    await store.createSession(local);
    await store.createSession(alices, { id: 'alice', name: 'Alice A.' });
    await store.createSession(bobs, { id: 'bob' });
    expect(await store.getSession(local)).toMatchObject({ owner: LOCAL_OWNER, ownerName: null });
    expect(await store.getSession(alices)).toMatchObject({ owner: 'alice', ownerName: 'Alice A.' });
    expect((await store.listSessions(10, 'alice')).map((session) => session.id)).toEqual([alices]);
    expect((await store.listSessions(10, 'bob')).map((session) => session.id)).toEqual([bobs]);
    expect(await store.listSessions(10, 'nobody')).toEqual([]);
    expect((await store.listSessions(10)).map((session) => session.id).sort()).toEqual([local, alices, bobs].sort());
  });

  it('gives a chat from before sign-in to the first who adopts it, and never takes someone’s chat', async () => {
    const before = randomUUID();
    const alices = randomUUID();
    await store.createSession(before);
    await store.createSession(alices, { id: 'alice', name: 'Alice A.' });
    expect(await store.adoptSession(before, { id: 'rosa', name: 'Rosa' })).toMatchObject({ id: before, owner: 'rosa', ownerName: 'Rosa' });
    expect(await store.adoptSession(before, { id: 'bob' })).toBeUndefined();
    expect(await store.adoptSession(alices, { id: 'rosa' })).toBeUndefined();
    expect(await store.adoptSession(randomUUID(), { id: 'rosa' })).toBeUndefined();
    expect(await store.getSession(before)).toMatchObject({ owner: 'rosa', ownerName: 'Rosa' });
    expect(await store.getSession(alices)).toMatchObject({ owner: 'alice', ownerName: 'Alice A.' });
  });

  it('remembers an ended sign-in, and forgets those past their expiry', async () => {
    const [ended, expired, other] = [randomUUID(), randomUUID(), randomUUID()];
    await store.revokeSignIn(expired, new Date(Date.now() - 1_000).toISOString());
    await store.revokeSignIn(ended, new Date(Date.now() + 3_600_000).toISOString());
    await store.revokeSignIn(ended, new Date(Date.now() + 3_600_000).toISOString());
    expect(await store.isSignInRevoked(ended)).toBe(true);
    expect(await store.isSignInRevoked(expired)).toBe(false);
    expect(await store.isSignInRevoked(other)).toBe(false);
  });

  it('deletes a session with everything in it', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    await store.createSession(sessionId);
    await store.appendMessages(sessionId, [{ role: 'user', content: 'x' }], 0);
    await store.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 1 });
    await store.appendEvent(sessionId, event(1));
    expect(await store.deleteSession(sessionId)).toBe(true);
    expect(await store.getSession(sessionId)).toBeUndefined();
    expect(await store.getRun(runId)).toBeUndefined();
    expect(await store.listEvents(sessionId, 0)).toEqual([]);
    expect(await store.deleteSession(sessionId)).toBe(false);
  });

  it('finds chats by a word of their title, a user message or an answer, only the owner’s when asked, and marks the match', async () => {
    const [mine, theirs] = [randomUUID(), randomUUID()];
    await store.createSession(mine, { id: 'alice', name: 'Alice' });
    await store.createSession(theirs, { id: 'bob' });
    await store.appendMessages(mine, [{ role: 'user', content: 'What is the capital of Mongolia?' }], 0);
    await store.appendMessages(
      mine,
      [
        { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"zebra":1}' }] },
        { role: 'tool', toolCallId: 'c1', content: 'zebra crossing' },
        { role: 'assistant', content: 'Its capital is Ulaanbaatar.' },
      ],
      4,
    );
    await store.appendMessages(theirs, [{ role: 'user', content: 'Plan a trip to Ulaanbaatar' }], 0);
    const search = async (terms: string[], owner?: string) => store.searchSessions({ terms, owner, limit: 20 });

    const answers = await search(['ulaanbaatar'], 'alice');
    expect(answers).toEqual([
      {
        sessionId: mine,
        title: 'What is the capital of Mongolia?',
        updatedAt: expect.any(String),
        owner: 'alice',
        ownerName: 'Alice',
        message: { position: 3, role: 'assistant', afterSeq: 4 },
        snippet: `Its capital is ${HIGHLIGHT_START}Ulaanbaatar${HIGHLIGHT_END}.`,
      },
    ]);
    expect([...new Set((await search(['ulaanbaatar'])).map((hit) => hit.sessionId))].sort()).toEqual([mine, theirs].sort());
    // The start of a word finds it; a title match has no message; a tool's result is not searched.
    const titleAndQuestion = await search(['mongol'], 'alice');
    expect(titleAndQuestion.map((hit) => hit.message?.position ?? 'title').sort()).toEqual([0, 'title']);
    expect(titleAndQuestion.every((hit) => hit.snippet.includes(`${HIGHLIGHT_START}Mongolia${HIGHLIGHT_END}`))).toBe(true);
    expect(await search(['zebra'])).toEqual([]);
    // Every term must match.
    expect(await search(['capital', 'trip'])).toEqual([]);
    expect(await search(['ulaanbaatar'], 'carol')).toEqual([]);

    await store.renameSession(mine, 'Steppe travel notes');
    expect((await search(['steppe'], 'alice')).map((hit) => [hit.sessionId, hit.message])).toEqual([[mine, undefined]]);
    expect((await search(['mongolia'], 'alice')).map((hit) => hit.message?.position)).toEqual([0]);
    // A rollback's history replaces the old one in the index; a deleted chat leaves it.
    await store.replaceMessages(mine, (await store.listMessages(mine)).slice(0, 1));
    expect(await search(['ulaanbaatar'], 'alice')).toEqual([]);
    await store.deleteSession(theirs);
    expect(await search(['ulaanbaatar'])).toEqual([]);
  });

  it('keeps the app settings with one record per change, refusing a change made from a version another change took', async () => {
    const start = await store.readAppSettings();
    if (start.version === 0) expect(start.settings).toEqual({});
    const by = { id: 'root', name: 'Root' };
    const first = [{ setting: 'model', before: null, after: 'model-a' }];
    expect(await store.saveAppSettings(start.version + 1, { model: 'model-a' }, { by, changes: first })).toBe(true);
    expect(await store.readAppSettings()).toEqual({ version: start.version + 1, settings: { model: 'model-a' } });
    // A second writer that read the same version loses: nothing of it is written.
    expect(await store.saveAppSettings(start.version + 1, { model: 'model-b' }, { by, changes: [] })).toBe(false);
    const second = [{ setting: 'approval.calculator', before: null, after: 'ask' }];
    expect(await store.saveAppSettings(start.version + 2, { model: 'model-a', approval: { calculator: 'ask' } }, { by, changes: second })).toBe(true);
    expect((await store.readAppSettings()).settings).toEqual({ model: 'model-a', approval: { calculator: 'ask' } });
    const changes = await store.listSettingsChanges(2);
    expect(changes.map((change) => [change.version, change.by, change.changes])).toEqual([
      [start.version + 2, by, second],
      [start.version + 1, by, first],
    ]);
    expect(Date.parse(changes[0]!.at)).toBeGreaterThanOrEqual(Date.parse(changes[1]!.at));
  });

  it('keeps read-only links by their token’s hash until they are revoked or their chat is deleted', async () => {
    const [chat, other] = [randomUUID(), randomUUID()];
    await store.createSession(chat, { id: 'alice' });
    await store.createSession(other, { id: 'alice' });
    const forever = await store.createShare({
      id: randomUUID(),
      tokenHash: 'a'.repeat(64),
      sessionId: chat,
      createdBy: 'alice',
      atSeq: 7,
      includeFiles: false,
    });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const daily = await store.createShare({
      id: randomUUID(),
      tokenHash: 'b'.repeat(64),
      sessionId: chat,
      createdBy: 'alice',
      atSeq: 9,
      includeFiles: true,
      expiresAt,
    });
    expect(await store.findShare('a'.repeat(64))).toEqual({ ...forever, createdAt: expect.any(String) });
    expect(await store.findShare('b'.repeat(64))).toEqual({ ...daily, includeFiles: true, expiresAt });
    expect(await store.findShare('c'.repeat(64))).toBeUndefined();
    expect((await store.listShares(chat)).map((share) => share.id)).toEqual([forever.id, daily.id]);
    // A link is revoked only through its own chat.
    expect(await store.deleteShare(other, forever.id)).toBe(false);
    expect(await store.deleteShare(chat, forever.id)).toBe(true);
    expect(await store.deleteShare(chat, forever.id)).toBe(false);
    expect(await store.findShare('a'.repeat(64))).toBeUndefined();
    await store.deleteSession(chat);
    expect(await store.findShare('b'.repeat(64))).toBeUndefined();
    expect(await store.listShares(chat)).toEqual([]);
  });
});

describe.skipIf(!url)('the schema on a PostgreSQL server', () => {
  const databases: Awaited<ReturnType<typeof freshPostgresDatabase>>[] = [];
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => undefined);
    for (const database of databases.splice(0)) await database.drop();
  });
  const fresh = async () => {
    const database = await freshPostgresDatabase(url!);
    databases.push(database);
    return database;
  };

  it('upgrades a database of an earlier release (its own version table) without running its steps again, and gives its chats to the local user', async () => {
    const database = await fresh();
    const before = randomUUID();
    // As the release before owners left it: its versions 1 to 5, one chat.
    const old = new PostgresDatabase(database.url);
    await old.exec('create table schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())');
    for (const step of SCHEMA.filter((candidate) => candidate.legacy !== undefined && candidate.legacy.postgres <= 5)) {
      for (const statement of step.postgres) await old.exec(statement);
      await old.query('insert into schema_migrations (version, name) values ($1, $2)', [step.legacy!.postgres, step.name]);
    }
    await old.query('insert into sessions (id, title) values ($1, $2)', [before, 'From before']);
    await old.close();
    const store = await openSqlStore(database.db);
    stores.push(store);
    expect(store.migrated).toEqual(SCHEMA.map((step) => step.name));
    expect(await store.getSession(before)).toMatchObject({ title: 'From before', owner: LOCAL_OWNER, ownerName: null });
    expect((await store.listSessions(10, LOCAL_OWNER)).map((session) => session.id)).toContain(before);
    expect(await store.listSessions(10, 'local')).toEqual([]);
  });

  /** The step that gave the chats of `local` an owner no identity can take. */
  const OWNERS_STEP = SCHEMA.findIndex((step) => step.name.startsWith('0009 '));

  it('upgrades the chats of `local` to the owner no identity can take, and leaves everyone else’s', async () => {
    const database = await fresh();
    const [before, alices] = [randomUUID(), randomUUID()];
    // As the release before left it: every step but the last, a chat of `local` and one of Alice's.
    const previous = new PostgresDatabase(database.url);
    const old = await openSqlStore(previous, undefined, { steps: SCHEMA.slice(0, OWNERS_STEP) });
    await previous.query(`insert into sessions (id, title, owner) values ($1, 'From before', 'local'), ($2, 'Hers', 'alice')`, [before, alices]);
    await old.close();
    const store = await openSqlStore(database.db);
    stores.push(store);
    expect(store.migrated).toEqual(SCHEMA.slice(OWNERS_STEP).map((step) => step.name));
    expect(await store.getSession(before)).toMatchObject({ title: 'From before', owner: LOCAL_OWNER });
    expect(await store.getSession(alices)).toMatchObject({ title: 'Hers', owner: 'alice' });
    expect(await store.listSessions(10, 'local')).toEqual([]);
  });

  it('indexes the chats of an earlier release for search when it upgrades', async () => {
    const database = await fresh();
    await expectSearchIndexedOnUpgrade(
      (steps) => openSqlStore(new PostgresDatabase(database.url), undefined, { steps }),
      async () => {
        const store = await openSqlStore(database.db);
        stores.push(store);
        return store;
      },
    );
  });

  it('runs a statement whose function body holds semicolons whole, and each step once', async () => {
    const database = await fresh();
    const body = `
      create function stepwise_test_double(value integer) returns integer as $$
      declare doubled integer;
      begin
        doubled := value * 2;
        return doubled;
      end;
      $$ language plpgsql`;
    const extra: SchemaStep = {
      name: '9999 a function with a body',
      postgres: [body, "create table stepwise_test_notes (note text not null default 'a; b;')"],
      sqlite: [],
    };
    const store = await openSqlStore(database.db, undefined, { steps: [...SCHEMA, extra] });
    stores.push(store);
    expect(store.migrated).toEqual([...SCHEMA, extra].map((step) => step.name));
    const raw = new PostgresDatabase(database.url);
    try {
      expect(await raw.query<{ doubled: number }>('select stepwise_test_double(21) as doubled')).toEqual([{ doubled: 42 }]);
      await raw.query('insert into stepwise_test_notes default values');
      expect(await raw.query('select note from stepwise_test_notes')).toEqual([{ note: 'a; b;' }]);
    } finally {
      await raw.close();
    }
    const again = await openSqlStore(new PostgresDatabase(database.url), undefined, { steps: [...SCHEMA, extra] });
    stores.push(again);
    expect(again.migrated).toEqual([]);
  });
});
