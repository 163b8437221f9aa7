import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  EMBEDDED_DATABASE_FOLDER,
  LOCAL_OWNER,
  loadConfig,
  type Logger,
  openSqliteStore,
  openStore,
  SCHEMA,
  SQLITE_DATABASE_FILE,
  SqlStore,
  type Store,
} from '@stepwise/backend';
import { PgliteDatabase } from '../../backend/src/store/pglite-database.ts';
import type { LoggedEvent } from '@stepwise/shared-types';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/** A logger that keeps what it is told. */
function recordingLogger() {
  const lines: { level: string; object: Record<string, unknown>; message: string | undefined }[] = [];
  const at = (level: string) => (object: object, message?: string) => void lines.push({ level, object: object as Record<string, unknown>, message });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return { logger, lines };
}

const event = (seq: number, runId: string | undefined, fields: Record<string, unknown> = {}): LoggedEvent =>
  ({
    type: 'agent_update',
    update_type: 'agent_turn_start',
    step: seq,
    seq,
    ts: new Date(Date.UTC(2030, 0, 1, 0, 0, seq)).toISOString(),
    run_id: runId,
    ...fields,
  }) as LoggedEvent;

/** Everything a store holds about some sessions, through the port: what must survive the move. */
async function snapshot(store: Store, sessionIds: string[]) {
  return {
    sessions: await store.listSessions(100),
    running: await store.listRunningRuns(),
    perSession: await Promise.all(
      sessionIds.map(async (id) => ({
        session: await store.getSession(id),
        messages: await store.listMessages(id),
        runs: await store.listRuns(id),
        events: await store.listEvents(id, 0),
        lastSeq: await store.lastSeq(id),
      })),
    ),
  };
}

// A data folder as the PGlite release left it, made once (creating PGlite takes seconds) and copied for each test.
let template: string;
let expected: Awaited<ReturnType<typeof snapshot>>;
const chat = randomUUID();
const untitled = randomUUID();
const finishedRun = randomUUID();
const waitingRun = randomUUID();
const checkpoint = { input: { question: 'Weather?', history: [] }, state: { step: 2, deadline: '2030-01-01T00:00:00.000Z', asked: 'ask_city' } };

/** The data written through the store's port (into SQLite in memory), to be what the old release held. */
async function theOldData(store: Store): Promise<void> {
  await store.createSession(chat);
  await store.createSession(untitled);
  await store.appendMessages(chat, [{ role: 'user', content: 'What is (17+25)*3?' }], 0);
  await store.createRun({ id: finishedRun, sessionId: chat, strategy: 'roa', maxSteps: 5, afterSeq: 0 });
  for (let seq = 1; seq <= 4; seq++) await store.appendEvent(chat, event(seq, finishedRun, { nested: { list: [1, 'two', null], text: 'ünïcödé ✓' } }));
  await store.appendMessages(
    chat,
    [
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"(17+25)*3"}' }] },
      { role: 'tool', toolCallId: 'c1', content: '126' },
      { role: 'assistant', content: 'It is 126.' },
    ],
    4,
  );
  await store.finishRun(finishedRun, {
    status: 'completed',
    endReason: 'answered',
    steps: 1,
    usage: { promptTokens: 3_000_000_000, completionTokens: 2 ** 40 },
  });
  await store.appendMessages(chat, [{ role: 'user', content: 'And the weather?' }], 4);
  await store.createRun({ id: waitingRun, sessionId: chat, strategy: 'roa', maxSteps: 5, afterSeq: 4 });
  await store.saveCheckpoint(waitingRun, checkpoint);
  await store.appendEvent(chat, event(5, waitingRun));
  await store.appendEvent(chat, event(6, undefined, { type: 'file_saved' }));
}

/**
 * Writes `data` into a PGlite folder as the PGlite release kept it: its schema (versions 1–3 of
 * its schema_migrations, no owners) and its rows, in that release's own SQL.
 */
async function writeOldRelease(folder: string, data: Awaited<ReturnType<typeof snapshot>>): Promise<void> {
  const old = await PgliteDatabase.open(folder);
  try {
    await old.exec('create table schema_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())');
    for (const step of SCHEMA.filter((candidate) => candidate.legacy && candidate.legacy.postgres <= 3)) {
      for (const statement of step.postgres) await old.exec(statement);
      await old.query('insert into schema_migrations (version, name) values ($1, $2)', [step.legacy!.postgres, step.name]);
    }
    for (const session of data.sessions) {
      await old.query('insert into sessions (id, title, created_at, updated_at) values ($1, $2, $3, $4)', [
        session.id,
        session.title,
        session.createdAt,
        session.updatedAt,
      ]);
    }
    for (const { session, messages, runs, events } of data.perSession) {
      for (const [position, record] of messages.entries()) {
        await old.query('insert into messages (session_id, position, message, after_seq) values ($1, $2, $3, $4)', [
          session!.id,
          position,
          JSON.stringify(record.message),
          record.afterSeq,
        ]);
      }
      for (const run of runs) {
        await old.query(
          `insert into runs (id, session_id, strategy, max_steps, status, end_reason, steps, prompt_tokens, completion_tokens, after_seq, started_at, ended_at, checkpoint)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
          [
            run.id,
            run.sessionId,
            run.strategy,
            run.maxSteps,
            run.status,
            run.endReason ?? null,
            run.steps ?? null,
            run.promptTokens,
            run.completionTokens,
            run.afterSeq ?? null,
            run.startedAt,
            run.endedAt ?? null,
            run.checkpoint === undefined ? null : JSON.stringify(run.checkpoint),
          ],
        );
      }
      for (const logged of events) {
        await old.query('insert into events (session_id, seq, run_id, payload) values ($1, $2, $3, $4)', [
          session!.id,
          logged.seq,
          logged.run_id ?? null,
          JSON.stringify(logged),
        ]);
      }
    }
  } finally {
    await old.close();
  }
}

beforeAll(async () => {
  template = mkdtempSync(join(tmpdir(), 'stepwise-pglite-data-'));
  const written = await openSqliteStore(':memory:');
  await theOldData(written);
  expected = await snapshot(written, [chat, untitled]);
  await written.close();
  await writeOldRelease(join(template, EMBEDDED_DATABASE_FOLDER), expected);
}, 120_000);

afterAll(() => rmSync(template, { recursive: true, force: true }));

const folders: string[] = [];
const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A copy of the old release's data folder. */
function oldDataFolder(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-data-'));
  folders.push(dataDir);
  cpSync(template, dataDir, { recursive: true });
  return dataDir;
}

async function open(dataDir: string, logger?: Logger): Promise<Store> {
  const store = await openStore(loadConfig({ DATA_DIR: dataDir }, { promptsDir: '' }), logger ?? recordingLogger().logger);
  stores.push(store);
  return store;
}

describe('moving the data of the PGlite release into SQLite', () => {
  it('happens on the first start: every session, message, run, checkpoint and event, and the old folder is kept', async () => {
    const dataDir = oldDataFolder();
    const { logger, lines } = recordingLogger();
    const store = await open(dataDir, logger);

    expect(store).toBeInstanceOf(SqlStore);
    expect((store as SqlStore).dialect).toBe('sqlite');
    expect(await snapshot(store, [chat, untitled])).toEqual(expected);
    // The parts a restart and the history depend on, spelled out.
    expect(await store.getSession(chat)).toMatchObject({ title: 'What is (17+25)*3?' });
    // A chat of the one user of those releases: the local user's, not of someone named `local`.
    expect(await store.getSession(chat)).toMatchObject({ owner: LOCAL_OWNER, ownerName: null });
    expect(await store.getRun(finishedRun)).toMatchObject({ status: 'completed', promptTokens: 3_000_000_000, completionTokens: 2 ** 40, afterSeq: 0 });
    expect((await store.getRun(finishedRun))?.checkpoint).toBeUndefined();
    expect(await store.listRunningRuns()).toMatchObject([{ id: waitingRun, status: 'running', afterSeq: 4, checkpoint }]);
    expect(await store.lastSeq(chat)).toBe(6);

    const files = readdirSync(dataDir);
    expect(files).toContain(SQLITE_DATABASE_FILE);
    expect(files).not.toContain(EMBEDDED_DATABASE_FOLDER);
    const movedAside = files.filter((name) => name.startsWith(`${EMBEDDED_DATABASE_FOLDER}.migrated-`));
    expect(movedAside).toHaveLength(1);
    expect(existsSync(join(dataDir, movedAside[0]!, 'PG_VERSION'))).toBe(true);
    expect(lines.find((line) => line.message?.startsWith('moved the embedded PostgreSQL data into SQLite'))?.object).toMatchObject({
      sessions: 2,
      messages: 5,
      runs: 2,
      events: 6,
      movedAside: join(dataDir, movedAside[0]!),
    });
  });

  it('goes on where the old store stopped, and happens only once', async () => {
    const dataDir = oldDataFolder();
    const store = await open(dataDir);
    await store.appendEvent(chat, event(7, waitingRun));
    await expect(store.appendEvent(chat, event(6, waitingRun))).rejects.toThrow();
    await store.appendMessages(chat, [{ role: 'assistant', content: 'Sunny.' }], 7);
    await store.finishRun(waitingRun, { status: 'completed', usage: { promptTokens: 10, completionTokens: 1 } });
    await store.close();
    stores.length = 0;

    const { logger, lines } = recordingLogger();
    const reopened = await open(dataDir, logger);
    expect(lines.some((line) => line.message?.startsWith('moved'))).toBe(false);
    expect(await reopened.lastSeq(chat)).toBe(7);
    expect((await reopened.listMessages(chat)).map((record) => record.afterSeq)).toEqual([0, 4, 4, 4, 4, 7]);
    expect(await reopened.listRunningRuns()).toEqual([]);
    expect(readdirSync(dataDir).filter((name) => name.startsWith(EMBEDDED_DATABASE_FOLDER))).toHaveLength(1);
  });

  it('starts over when an earlier move stopped half way', async () => {
    const dataDir = oldDataFolder();
    writeFileSync(join(dataDir, `${SQLITE_DATABASE_FILE}.importing`), 'left by a start that was killed');
    const store = await open(dataDir);
    expect(await snapshot(store, [chat, untitled])).toEqual(expected);
    expect(readdirSync(dataDir).filter((name) => name.startsWith(SQLITE_DATABASE_FILE))).not.toContain(`${SQLITE_DATABASE_FILE}.importing`);
  });

  it('is also a command, pnpm migrate-data', { timeout: 120_000 }, async () => {
    const dataDir = oldDataFolder();
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'scripts', 'migrate-data.mjs'), dataDir], { cwd: root, timeout: 110_000 });
    expect(stdout).toMatch(/Moved 2 sessions, 5 messages, 2 runs and 6 events\. The old folder is now .*db\.migrated-/);
    const store = await open(dataDir);
    expect(await snapshot(store, [chat, untitled])).toEqual(expected);

    const again = await promisify(execFile)(process.execPath, [join(root, 'scripts', 'migrate-data.mjs'), dataDir], { cwd: root, timeout: 110_000 });
    expect(again.stdout).toMatch(/^Nothing to do: .*stepwise\.db already exists/);
  });
});
