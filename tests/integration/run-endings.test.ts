import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, createFileTools, openSqliteStore, SessionFiles, type Store, TOKENS, type Tool } from '@stepwise/backend';
import type { DependencyContainer } from 'tsyringe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

type RunEnd = Parameters<Store['finishRun']>[1];
type Logged = Record<string, unknown> & { seq: number; type: string; run_id?: string };

// This file's own database: a server started on it recovers every run it finds still running, so
// no other file's runs may be in it.
let store: Store;
let llm: ScriptedLlmServer;
const open = closeAfterEach();

beforeAll(async () => {
  store = await openSqliteStore(':memory:');
});

afterAll(() => store?.close());

beforeEach(async () => {
  llm = open(await ScriptedLlmServer.start());
});

async function start(options: { store?: Store; configure?: (container: DependencyContainer) => void; env?: Record<string, string> } = {}) {
  return open(
    await startStepwise(
      { LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', ...options.env },
      options.configure,
      options.store ?? store,
    ),
  );
}

async function connect(server: TestServer, query: Record<string, string | number> = {}): Promise<TestClient> {
  return open(await TestClient.connect(server.wsUrl, query));
}

/** Closes `server` and starts another on the same database: a restart, as far as the store can tell. */
async function restart(server: TestServer): Promise<TestServer> {
  await server.close();
  return start();
}

async function api(server: TestServer, path: string): Promise<any> {
  const response = await fetch(`${server.url}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

const loggedEvents = async (server: TestServer, sessionId: string): Promise<Logged[]> =>
  (await api(server, `/api/sessions/${sessionId}/events?limit=10000`)).events;

const runsOf = async (server: TestServer, sessionId: string) => (await api(server, `/api/sessions/${sessionId}`)).runs;

/** The events that end a response: a run's ending, and response_complete. */
const endings = (events: readonly Record<string, unknown>[]) =>
  summarize(events).filter((kind) => /^(agent_completion|agent_stopped|agent_error|response_complete)/.test(kind));

/** A promise and the function that resolves it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** The database, except that finishRun throws whenever `refuses` says so. */
function refusingFinishRun(refuses: (end: RunEnd) => boolean): Store {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'finishRun') {
        return async (runId: string, end: RunEnd) => {
          if (refuses(end)) throw new Error('the database refused the run’s end');
          return target.finishRun(runId, end);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('the end of a run', () => {
  it('is saved with 3000000000 prompt tokens, and the run ends once across a restart', async () => {
    const server = await start();
    const client = await connect(server);
    const sessionId = String(client.session.session_id);
    llm.enqueue(
      { text: reasonText('Plan.', { finish: true }), usage: { prompt_tokens: 3_000_000_000, completion_tokens: 5 } },
      { text: observeText('ok', { final_answer: 'Done.' }), usage: { prompt_tokens: 3_000_000_000, completion_tokens: 7 } },
    );
    client.chat('Count big', { agent_mode: true });
    expect(endings(await client.untilComplete())).toEqual(['agent_completion:answered', 'response_complete']);
    llm.enqueue({ text: 'Big.', usage: { prompt_tokens: 3_000_000_000, completion_tokens: 2_500_000_000 } });
    const from = client.events.length;
    client.chat('And plainly?');
    expect(endings(await client.untilComplete({ from }))).toEqual(['response_complete']);

    const expected = [
      { strategy: 'roa', status: 'completed', prompt_tokens: 6_000_000_000, completion_tokens: 12 },
      { strategy: 'chat', status: 'completed', prompt_tokens: 3_000_000_000, completion_tokens: 2_500_000_000 },
    ];
    expect(await runsOf(server, sessionId)).toMatchObject(expected);
    const before = await loggedEvents(server, sessionId);

    const again = await restart(server);
    expect(await loggedEvents(again, sessionId)).toEqual(before);
    expect(await runsOf(again, sessionId)).toMatchObject(expected);
  });

  it('is saved without its token usage when the store refuses the usage', async () => {
    const server = await start({ store: refusingFinishRun((end) => end.usage !== undefined) });
    const client = await connect(server);
    llm.enqueue({ text: reasonText('Plan.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Done.' }) });
    client.chat('Finish', { agent_mode: true });
    expect(endings(await client.untilComplete())).toEqual(['agent_completion:answered', 'response_complete']);
    expect(await runsOf(server, String(client.session.session_id))).toMatchObject([{ status: 'completed', prompt_tokens: 0, completion_tokens: 0 }]);
  });

  it('that cannot be saved at all still reaches the client once, and a restart adds no second ending', async () => {
    const failing = await start({ store: refusingFinishRun(() => true) });
    const client = await connect(failing);
    const sessionId = String(client.session.session_id);
    llm.enqueue({ text: reasonText('Plan.', { finish: true }) }, { text: observeText('ok', { final_answer: 'Done.' }) });
    client.chat('Finish', { agent_mode: true });
    expect(endings(await client.untilComplete())).toEqual(['agent_completion:answered', 'response_complete']);
    llm.enqueue({ text: 'Plain answer.' });
    const from = client.events.length;
    client.chat('And plainly?');
    expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
    expect((await runsOf(failing, sessionId)).map((run: { status: string }) => run.status)).toEqual(['running', 'running']);
    const before = await loggedEvents(failing, sessionId);

    const again = await restart(failing);
    expect(await loggedEvents(again, sessionId)).toEqual(before);
    expect(await runsOf(again, sessionId)).toMatchObject([
      { strategy: 'roa', status: 'completed', steps: 1 },
      { strategy: 'chat', status: 'completed' },
    ]);
    // The session goes on as usual.
    const rejoined = await connect(again, { session_id: sessionId, after_seq: before.at(-1)!.seq });
    llm.enqueue({ text: 'Still here.' });
    rejoined.chat('Still there?');
    expect(summarize(await rejoined.untilComplete())).toEqual(['assistant_message', 'response_complete']);
  });

  it('that cannot be saved, for a run stopped while it asked a question, does not bring the question back after a restart', async () => {
    const failing = await start({ store: refusingFinishRun(() => true) });
    const client = await connect(failing);
    const sessionId = String(client.session.session_id);
    llm.enqueue({ text: reasonText('Ask.') }, { toolCalls: [{ id: 'ask', name: 'request_input', arguments: { question: 'Which city?' } }] });
    client.chat('Weather?', { agent_mode: true });
    await client.waitFor('agent_request_input');
    client.send({ type: 'agent_control', action: 'stop' });
    expect(endings(await client.untilComplete())).toEqual(['agent_stopped:user', 'response_complete']);
    const before = await loggedEvents(failing, sessionId);

    const again = await restart(failing);
    expect(await loggedEvents(again, sessionId)).toEqual(before);
    expect(await runsOf(again, sessionId)).toMatchObject([{ status: 'stopped', end_reason: 'user' }]);
    const rejoined = await connect(again, { session_id: sessionId, after_seq: before.at(-1)!.seq });
    rejoined.send({ type: 'agent_user_input', content: 'Oslo' });
    expect(await rejoined.waitFor('error')).toMatchObject({ code: 'no_pending_input' });
  });
});

/**
 * Session files whose writes of text trickle to disk, a piece at a time, so that a run can be
 * stopped while its writes are under way. It keeps each write's promise.
 */
class TricklingFiles extends SessionFiles {
  readonly writes: Promise<unknown>[] = [];
  settled = 0;
  private started = 0;
  private readonly allStarted = deferred();

  constructor(
    config: Config,
    private readonly expected: number,
  ) {
    super(config);
  }

  /** Resolves once `expected` writes have begun to put bytes on disk. */
  whenAllStarted(): Promise<void> {
    return this.allStarted.promise;
  }

  override write(...[sessionId, name, data, options]: Parameters<SessionFiles['write']>): ReturnType<SessionFiles['write']> {
    const written = super.write(sessionId, name, typeof data === 'string' ? this.trickle(data) : data, options);
    this.writes.push(written.finally(() => this.settled++).catch(() => undefined));
    return written;
  }

  private async *trickle(text: string): AsyncIterable<string> {
    const pieces = text.match(/[\s\S]{1,40}/g) ?? [];
    for (const [index, piece] of pieces.entries()) {
      if (index === 1 && ++this.started === this.expected) this.allStarted.resolve();
      // A slow disk: each piece takes a while.
      if (index > 0) await new Promise((resolve) => setTimeout(resolve, 25));
      yield piece;
    }
  }
}

describe('stopping a run while its tools write files', () => {
  it('ends every write before the run’s response_complete; no file of the run appears or is announced after it', async () => {
    let files!: TricklingFiles;
    const server = await start({
      configure: (container) => {
        files = new TricklingFiles(container.resolve<Config>(TOKENS.Config), 12);
        container.register(SessionFiles, { useValue: files });
      },
    });
    const client = await connect(server);
    const sessionId = String(client.session.session_id);
    const writes = Array.from({ length: 12 }, (_, index) => ({
      id: `write_${index}`,
      name: 'write_file',
      arguments: { name: `part-${index}.txt`, content: `${index % 10}`.repeat(8_000) },
    }));
    llm.enqueue({ text: reasonText('Write the parts.') }, { toolCalls: writes }, { text: observeText('ok', { final_answer: 'Written.' }) });
    client.chat('Write twelve parts', { agent_mode: true, tool_approval: { write_file: 'auto' } });
    await files.whenAllStarted();
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    // By the time the client hears the run has ended, no write of it is still going.
    expect(files.settled).toBe(12);
    expect(endings(events)).toEqual(['agent_stopped:user', 'response_complete']);

    await Promise.all(files.writes);
    const runId = events.find((event) => event.update_type === 'agent_start')!.run_id;
    const log = await loggedEvents(server, sessionId);
    const end = log.findIndex((event) => event.type === 'response_complete' && event.run_id === runId);
    expect(log.slice(end + 1).filter((event) => event.run_id === runId)).toEqual([]);
    const announced = log
      .slice(0, end)
      .filter((event) => event.type === 'file_saved')
      .map((event) => (event.file as { name: string }).name);
    const folder = join(files.root, sessionId);
    // Only what was announced before the end is there, and nothing half-written (no temporary files).
    expect(readdirSync(folder).sort()).toEqual(announced.sort());
    expect(announced.length).toBeLessThan(12);
  });

  it('logs a file that a tool saves after its run has ended, but not as the run’s', async () => {
    const gate = deferred();
    const started = deferred();
    const server = await start({
      configure: (container) => {
        const files = container.resolve(SessionFiles);
        // A tool that ignores the stop and writes once the test lets it, well after the run ended.
        const stubborn: Tool<Record<string, never>> = {
          name: 'stubborn_write',
          description: 'Writes late.',
          source: 'builtin',
          parameters: z.object({}),
          async execute(_args, { sessionId, runId }) {
            started.resolve();
            await gate.promise;
            await files.write(sessionId, 'late.txt', 'late', { source: 'agent', runId });
            return 'written';
          },
        };
        container.register<Tool[]>(TOKENS.BuiltinTools, {
          useValue: [...createFileTools(files, { readCapBytes: 1_000 }), stubborn as Tool],
        });
      },
    });
    const client = await connect(server);
    llm.enqueue({ text: reasonText('Write late.') }, { toolCalls: [{ id: 'late', name: 'stubborn_write', arguments: {} }] });
    client.chat('Write it late', { agent_mode: true, tools: ['stubborn_write'] });
    await started.promise;
    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    expect(endings(events)).toEqual(['agent_stopped:user', 'response_complete']);
    const runId = events.at(-1)!.run_id;

    const from = client.events.length;
    gate.resolve();
    const saved = await client.next((event) => event.type === 'file_saved', { from });
    expect(saved).toMatchObject({ file: { name: 'late.txt' }, source: 'agent' });
    expect(saved).not.toHaveProperty('run_id');
    expect(client.logged.filter((event) => event.run_id === runId).at(-1)!.type).toBe('response_complete');
  });
});
