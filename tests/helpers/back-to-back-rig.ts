import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { observeText, reasonText, type RecordedRequest, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { chatsBackToBack } from './back-to-back.ts';
import { freshPostgresDatabase } from './databases.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, type StepwiseProcess, stopAllProcesses } from './process.ts';
import { TestClient } from './ws-client.ts';

// What the files of `response_complete means the session is free` (integration/response-complete*.test.ts)
// share: the scripted model, clients sending chats back to back, and servers started once for a
// group of tests (each test works in sessions of its own, so they do not interfere).

export const ROUNDS = 50;

/** What starting a rig's servers is given. */
export interface RigSetup {
  /** The environment that puts the rig's scripted model behind a server. */
  model: Record<string, string>;
  /** A new data folder (DATA_DIR), removed after the last test. */
  folder: () => Record<string, string>;
  /** Runs after the servers are stopped (a database to drop). */
  onClose: (cleanup: () => Promise<void>) => void;
}

/**
 * Registers, in the calling describe, a scripted model started once for its tests, and the
 * servers `start` starts (once, before the first test; stopped after the last), and leaves no
 * client open and no request recorded from one test to the next.
 */
export function backToBackRig<T>(start: (setup: RigSetup) => Promise<T>) {
  let llm: ScriptedLlmServer | undefined;
  let started: T | undefined;
  const clients: TestClient[] = [];
  const folders: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const rig = {
    get llm(): ScriptedLlmServer {
      return llm!;
    },
    get servers(): T {
      return started!;
    },
    async connect(instance: StepwiseProcess, query: Record<string, string | number> = {}): Promise<TestClient> {
      const client = await TestClient.connect(instance.wsUrl, query);
      clients.push(client);
      return client;
    },
    /** Every act call hangs until the run is stopped. */
    hangingActs(): void {
      llm!.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working on it.') }));
    },
    /** Every run answers by itself in one step. */
    answeringRuns(): void {
      llm!.respond((request) => {
        if (request.phase === 'act') return { text: 'No tool needed.' };
        if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: 'Done.' }) };
        return { text: reasonText('Answer at once.') };
      });
    },
    /** Runs that `stopper` stops once each is in its act call, sent back to back on `client`. */
    stoppedBackToBack(client: TestClient, stopper: TestClient) {
      return chatsBackToBack([client], ROUNDS, {
        chat: (round) => ({ content: `Long job ${round}`, agent_mode: true }),
        each: async (round) => {
          await actOfRound(round);
          stopper.send({ type: 'agent_control', action: 'stop' });
        },
      });
    },
    answeredBackToBack(...senders: TestClient[]) {
      return chatsBackToBack(senders, ROUNDS, { chat: (round) => ({ content: `Quick job ${round}`, agent_mode: true }) });
    },
  };

  /** Waits for the act call of `round` (the round-th act call the model server saw in this test). */
  function actOfRound(round: number): Promise<RecordedRequest> {
    return llm!.waitFor((request) => llm!.requests.filter((each) => each.phase === 'act').indexOf(request) === round, 30_000);
  }

  beforeAll(async () => {
    llm = await ScriptedLlmServer.start();
    // A client here sends faster than the default rate limit allows.
    const model = { LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', LLM_MAX_RETRIES: '0', MAX_MESSAGES_PER_SECOND: '1000' };
    const folder = () => {
      const path = mkdtempSync(join(tmpdir(), 'stepwise-back-to-back-'));
      folders.push(path);
      return { DATA_DIR: path };
    };
    started = await start({ model, folder, onClose: (cleanup) => cleanups.push(cleanup) });
  }, PROCESS_TEST_TIMEOUT_MS);
  afterEach(() => {
    for (const client of clients.splice(0)) client.socket.terminate();
    llm?.requests.splice(0);
  });
  afterAll(async () => {
    for (const client of clients.splice(0)) client.socket.terminate();
    await stopAllProcesses({ signal: 'SIGKILL' });
    await llm?.close();
    for (const cleanup of cleanups.splice(0)) await cleanup();
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  }, 60_000);
  return rig;
}

/** Two instances on a fresh PostgreSQL database and Redis, the rig's scripted model behind both. */
export async function twoInstances(
  { model, onClose }: RigSetup,
  urls: { postgres: string; redis: string },
  extra: Record<string, string> = {},
): Promise<[StepwiseProcess, StepwiseProcess]> {
  const database = await freshPostgresDatabase(urls.postgres);
  await database.db.close();
  onClose(database.drop);
  const env = (id: string) => ({ ...model, DATABASE_URL: database.url, REDIS_URL: urls.redis, INSTANCE_ID: id, CLUSTER_LEASE_MS: '1500', ...extra });
  return Promise.all([startStepwiseProcess(env('a')), startStepwiseProcess(env('b'))]);
}

/** A socket on A in a stored session (an edit of its todo list stores it), and one on B in the same session. */
export async function socketsInOneSession(
  rig: { connect: (instance: StepwiseProcess, query?: Record<string, string | number>) => Promise<TestClient> },
  [a, b]: [StepwiseProcess, StepwiseProcess],
): Promise<[TestClient, TestClient]> {
  const onA = await rig.connect(a);
  onA.send({ type: 'todos_set', todos: [] });
  await onA.waitFor('agent_todos');
  const onB = await rig.connect(b, { session_id: onA.session.session_id, after_seq: 0 });
  expect(onB.session.session_id).toBe(onA.session.session_id);
  return [onA, onB];
}

/** The cases of one instance, on the instance `rig` started (each test in sessions of its own). */
export function oneInstanceCases(rig: ReturnType<typeof backToBackRig<StepwiseProcess>>): void {
  it('a chat sent the instant a stopped run completes is accepted, 50 times in a row', async () => {
    rig.hangingActs();
    const client = await rig.connect(rig.servers);
    const stopper = await rig.connect(rig.servers, { session_id: client.session.session_id, after_seq: 0 });
    expect(await rig.stoppedBackToBack(client, stopper)).toEqual({ completed: ROUNDS, errors: [] });
  });

  it('a chat sent the instant a run answers is accepted, 50 times in a row', async () => {
    rig.answeringRuns();
    expect(await rig.answeredBackToBack(await rig.connect(rig.servers))).toEqual({ completed: ROUNDS, errors: [] });
  });
}
