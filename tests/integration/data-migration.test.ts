import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  EMBEDDED_DATABASE_FOLDER,
  loadConfig,
  type Logger,
  openSqlStore,
  openStore,
  PgliteDatabase,
  SQLITE_DATABASE_FILE,
  SqliteStore,
  type Store,
} from '@stepwise/backend';
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

beforeAll(async () => {
  template = mkdtempSync(join(tmpdir(), 'stepwise-pglite-data-'));
  const old = await openSqlStore(await PgliteDatabase.open(join(template, EMBEDDED_DATABASE_FOLDER)));
  await old.createSession(chat);
  await old.createSession(untitled);
  await old.appendMessages(chat, [{ role: 'user', content: 'What is (17+25)*3?' }], 0);
  await old.createRun({ id: finishedRun, sessionId: chat, strategy: 'roa', maxSteps: 5, afterSeq: 0 });
  for (let seq = 1; seq <= 4; seq++) await old.appendEvent(chat, event(seq, finishedRun, { nested: { list: [1, 'two', null], text: 'ünïcödé ✓' } }));
  await old.appendMessages(
    chat,
    [
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"(17+25)*3"}' }] },
      { role: 'tool', toolCallId: 'c1', content: '126' },
      { role: 'assistant', content: 'It is 126.' },
    ],
    4,
  );
  await old.finishRun(finishedRun, { status: 'completed', endReason: 'answered', steps: 1, usage: { promptTokens: 3_000_000_000, completionTokens: 2 ** 40 } });
  await old.appendMessages(chat, [{ role: 'user', content: 'And the weather?' }], 4);
  await old.createRun({ id: waitingRun, sessionId: chat, strategy: 'roa', maxSteps: 5, afterSeq: 4 });
  await old.saveCheckpoint(waitingRun, checkpoint);
  await old.appendEvent(chat, event(5, waitingRun));
  await old.appendEvent(chat, event(6, undefined, { type: 'file_saved' }));
  expected = await snapshot(old, [chat, untitled]);
  await old.close();
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

    expect(store).toBeInstanceOf(SqliteStore);
    expect(await snapshot(store, [chat, untitled])).toEqual(expected);
    // The parts a restart and the history depend on, spelled out.
    expect(await store.getSession(chat)).toMatchObject({ title: 'What is (17+25)*3?' });
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
