import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDatabase, SQLITE_DATABASE_FILE } from '@stepwise/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, type StepwiseProcess, stopAllProcesses } from '../helpers/process.ts';
import { TestClient } from '../helpers/ws-client.ts';

type Logged = TestClient['events'][number];

/** How many times the server is killed, and how many logged events it must have sent since its start each time. */
const KILLS = 4;
const EVENTS_BEFORE_KILL = 60;

let dataDir: string | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.terminate();
  await stopAllProcesses({ signal: 'SIGKILL' });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
}, 60_000);

async function connect(wsUrl: string, query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(wsUrl, query);
  clients.push(client);
  return client;
}

/** Chats on and on (agent runs with the calculator, and plain answers) until the socket closes. */
async function keepChatting(client: TestClient): Promise<void> {
  for (let turn = 0; client.closeCode === undefined; turn++) {
    const from = client.events.length;
    client.chat(`What is (${turn}+25)*3?`, { agent_mode: turn % 2 === 0 });
    const ended = await client
      .waitUntil(
        () =>
          client.closeCode !== undefined || client.events.slice(from).some((event) => event.type === 'response_complete' || event.type === 'error')
            ? true
            : undefined,
        30_000,
      )
      .catch(() => false);
    if (!ended) return;
  }
}

/** The whole stored log of a session, read back through the history API page by page. */
async function storedEvents(url: string, sessionId: string): Promise<Logged[]> {
  const events: Logged[] = [];
  for (let afterSeq = 0; ; ) {
    const response = await fetch(`${url}/api/sessions/${sessionId}/events?after_seq=${afterSeq}&limit=200`);
    expect(response.status).toBe(200);
    const page = (await response.json()) as { events: Logged[]; last_seq: number; has_more: boolean };
    events.push(...page.events);
    if (!page.has_more) return events;
    afterSeq = page.last_seq;
  }
}

describe('the embedded SQLite database under SIGKILL', () => {
  it('reopens cleanly after each kill mid-write, with every event a client was sent', { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'stepwise-kill-'));
    const env = { DATA_DIR: dataDir, LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' };
    /** Per session, every logged event a client received: the server stores each before it sends it. */
    const acknowledged = new Map<string, Map<number, Logged>>();
    const record = (client: TestClient) => {
      const sessionId = String(client.session.session_id);
      const seen = acknowledged.get(sessionId) ?? new Map<number, Logged>();
      for (const event of client.logged) seen.set(Number(event.seq), event);
      acknowledged.set(sessionId, seen);
    };

    for (let round = 0; round <= KILLS; round++) {
      const server: StepwiseProcess = await startStepwiseProcess(env);

      // Everything acknowledged before the earlier kills is there, exactly as it was sent, with no gap.
      for (const [sessionId, seen] of acknowledged) {
        const stored = await storedEvents(server.url, sessionId);
        expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
        for (const [seq, event] of seen) expect(stored[seq - 1], `session ${sessionId}, seq ${seq}`).toEqual(event);
      }
      if (round === KILLS) {
        await server.kill();
        break;
      }

      // The earlier sessions go on, a new one starts, and all of them write at once until the kill.
      const writers = [
        ...(await Promise.all(
          [...acknowledged.entries()].map(([sessionId, seen]) => connect(server.wsUrl, { session_id: sessionId, after_seq: Math.max(0, ...seen.keys()) })),
        )),
        await connect(server.wsUrl),
        await connect(server.wsUrl),
      ];
      const chatting = writers.map((client) => keepChatting(client));
      const received = () => writers.reduce((total, client) => total + client.logged.length, 0);
      await Promise.race(writers.map((client) => client.waitUntil(() => (received() >= EVENTS_BEFORE_KILL ? true : undefined), 30_000)));
      await server.kill();
      expect(await server.exited).toBe('SIGKILL');
      await Promise.all(chatting);
      for (const client of writers) record(client);
      clients.splice(0);
    }

    // After the last kill the file itself is sound.
    const db = openSqliteDatabase(join(dataDir, SQLITE_DATABASE_FILE), 'full');
    try {
      expect(db.prepare('pragma integrity_check').get([])).toMatchObject({ integrity_check: 'ok' });
    } finally {
      db.close();
    }
    expect(acknowledged.size).toBe(2 * KILLS);
  });
});
