// The commit pipeline: a run's events and journal entries are stored while the run goes on, and
// every promise still holds: nothing reaches a client before it is stored, a tool's start (and the
// model call that asked for it) is committed before the tool runs, the run ends with all it wrote.
import type { DeltaEvent, ServerEvent } from '@stepwise/shared-types';
import {
  AgentControl,
  configFromEnv,
  HandlebarsPromptProvider,
  type Logger,
  openSqliteStore,
  roa,
  type RunJournal,
  RunKernel,
  type SqlStore,
  type Store,
  type Tool,
  ToolRegistry,
} from '@stepwise/backend';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ClientConnection } from '../../backend/src/chat/client-connection.ts';
import { SessionEventLog } from '../../backend/src/chat/session-event-log.ts';
import { observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';
import { sqliteTestStores } from '../helpers/sqlite-stores.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const stores = sqliteTestStores('file');
afterEach(() => stores.teardown());

/**
 * A store whose event writes wait at a gate while it is closed, and fail for the seqs in `failing`;
 * it tells which events' writes have committed.
 */
function gatedStore(store: SqlStore, failing: number[] = []) {
  const committed = new Set<number>();
  let open: () => void = () => undefined;
  let gate: Promise<void> | undefined;
  const gated = Object.create(store) as Store;
  gated.appendEvent = async (sessionId, event) => {
    if (gate) await gate;
    if (failing.includes(event.seq)) throw new Error('disk full');
    await store.appendEvent(sessionId, event);
    committed.add(event.seq);
  };
  return {
    store: gated,
    committed,
    close() {
      gate = new Promise((resolve) => (open = resolve));
    },
    open: () => {
      gate = undefined;
      open();
    },
  };
}

/** A client connection that records what it is sent, and whether each event was stored by then. */
function recordingConnection(committed: Set<number>) {
  const sent: { seq: number; storedWhenSent: boolean }[] = [];
  /** Everything sent, in order: `seq:N` for logged events, `preview:TEXT` for previews. */
  const order: string[] = [];
  const connection: ClientConnection = {
    send(message: ServerEvent) {
      const seq = (message as { seq?: number }).seq;
      if (seq !== undefined) sent.push({ seq, storedWhenSent: committed.has(seq) });
      order.push(seq !== undefined ? `seq:${seq}` : `preview:${(message as { delta?: string }).delta}`);
    },
    congested: false,
    closed: false,
    whenDrained: async () => undefined,
    close() {},
  } as unknown as ClientConnection;
  return { connection, sent, order };
}

function kernelOver(store: Store, llm: ScriptedLlmClient, tools: Tool[]) {
  const config = configFromEnv({ AGENT_INPUT_TIMEOUT_MS: '60000' });
  const journal: RunJournal = {
    read: (runId) => store.readJournal(runId),
    append: (runId, entry) => store.appendJournal(runId, entry),
    truncate: (runId, from) => store.truncateJournal(runId, from),
    // As the server's journal: entries commit with the events after them, in one group commit.
    commitsWithEvents: true,
  };
  return new RunKernel([roa], llm, new ToolRegistry(config, tools), new HandlebarsPromptProvider(config), config, silent, journal);
}

/** Runs one roa request in session-1 (a new run of the store), logging into `sink`. */
async function execute(kernel: RunKernel, store: Store, sink: SessionEventLog, toolNames: string[], runId: string = crypto.randomUUID()) {
  await store.createRun({ id: runId, sessionId: 'session-1', strategy: 'roa', maxSteps: 3 });
  return kernel.execute(
    { runId, sessionId: 'session-1', strategy: 'roa', question: 'Q', history: [], maxSteps: 3, toolNames, options: {} },
    { control: new AgentControl(), sink, filesManifest: async () => '' },
  );
}

/** One tool step, then the answer. */
const oneToolStep = () =>
  new ScriptedLlmClient((request) => {
    if (request.purpose === 'roa.reason') return { text: reasonText('Look it up.') };
    if (request.purpose === 'roa.act') {
      const done = request.messages.some((message) => message.role === 'tool');
      return done ? { text: 'nothing more' } : { toolCalls: [{ name: 'lookup', arguments: {}, id: 'call-1' }] };
    }
    return { text: observeText('Found it.', { final_answer: 'found', should_continue: false }) };
  });

describe('the commit pipeline', () => {
  it('the next model call leaves while the last one’s events are still being stored, and each event reaches the client only once stored, in order', async () => {
    const sqlite = await stores.open();
    await sqlite.createSession('session-1');
    const gated = gatedStore(sqlite);
    const log = new SessionEventLog('session-1', gated.store, 0);
    const { connection, sent } = recordingConnection(gated.committed);
    await log.attach(connection, 0);
    const llm = oneToolStep();
    const tool = { name: 'lookup', description: 'lookup', source: 'builtin', parameters: z.object({}).passthrough(), execute: async () => 'the value' };
    const kernel = kernelOver(gated.store, llm, [tool as unknown as Tool]);

    gated.close();
    const outcome = execute(kernel, sqlite, log, ['lookup']);
    // The reasoning call is done and its events wait at the closed gate: the act call goes out all the same.
    await llm.untilCalls(2);
    expect(llm.purposes()).toEqual(['roa.reason', 'roa.act']);
    expect(gated.committed.size).toBe(0);
    expect(sent).toEqual([]);
    gated.open();

    expect(await outcome).toMatchObject({ status: 'completed', answer: 'found' });
    // The run ended with everything it emitted stored and sent: every event, once, in order, each after its commit.
    const stored = await sqlite.listEvents('session-1', 0);
    expect(stored.at(-1)?.type).toBe('response_complete');
    expect(sent.map((item) => item.seq)).toEqual(stored.map((event) => event.seq));
    expect(sent.every((item) => item.storedWhenSent)).toBe(true);
    expect(log.lastSeq).toBe(stored.length);
  });

  it('a tool runs only once its start, and the model call that asked for it, are committed', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'stepwise-pipeline-'));
    const file = join(folder, 'stepwise.db');
    const sqlite = await openSqliteStore(file);
    // What another connection to the database sees while the tool runs: committed rows only.
    const reader = await openSqliteStore(file);
    let seenByTool: string[] = [];
    const runId = crypto.randomUUID();
    const tool = {
      name: 'lookup',
      description: 'lookup',
      source: 'builtin',
      parameters: z.object({}).passthrough(),
      execute: async () => {
        seenByTool = (await reader.readJournal(runId)).map((entry) => `${entry.kind}:${entry.key}`);
        return 'the value';
      },
    };
    try {
      await sqlite.createSession('session-1');
      const kernel = kernelOver(sqlite, oneToolStep(), [tool as unknown as Tool]);
      const outcome = await execute(kernel, sqlite, new SessionEventLog('session-1', sqlite, 0), ['lookup'], runId);
      expect(outcome.status === 'failed' ? outcome.message : outcome.status).toBe('completed');
      expect(seenByTool).toEqual(['input:input', 'model:roa.reason', 'model:roa.act', 'tool_started:lookup:call-1']);
    } finally {
      await reader.close();
      await sqlite.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('an event that could not be stored is never sent, and fails the run instead of passing in silence', async () => {
    const sqlite = await stores.open();
    await sqlite.createSession('session-1');
    // The third event (the reasoning, after agent_start and the call's usage) hits a full disk.
    const failing = gatedStore(sqlite, [3]);
    const { connection, sent } = recordingConnection(failing.committed);
    const log = new SessionEventLog('session-1', failing.store, 0);
    await log.attach(connection, 0);
    const kernel = kernelOver(failing.store, oneToolStep(), []);
    const outcome = await execute(kernel, sqlite, log, []);
    expect(outcome.status).toBe('failed');
    const stored = await sqlite.listEvents('session-1', 0);
    expect(stored.map((event) => event.seq)).not.toContain(3);
    expect(sent.map((item) => item.seq)).toEqual(stored.map((event) => event.seq));
    expect(stored.at(-1)?.type).toBe('response_complete');
    expect(stored.some((event) => event.type === 'agent_update' && event.update_type === 'agent_error')).toBe(true);
  });

  it('a preview never overtakes an event still being stored, and the previews before an event go out before it', async () => {
    const sqlite = await stores.open();
    await sqlite.createSession('session-1');
    const gated = gatedStore(sqlite);
    const log = new SessionEventLog('session-1', gated.store, 0);
    const { connection, order } = recordingConnection(gated.committed);
    await log.attach(connection, 0);
    const runId = crypto.randomUUID();
    const delta = (text: string, step: number): DeltaEvent => ({ type: 'agent_update', update_type: 'agent_reason_delta', run_id: runId, step, delta: text });

    gated.close();
    log.preview(delta('first ', 1));
    await log.emit({ type: 'agent_update', update_type: 'agent_reason', run_id: runId, step: 1, content: 'first' });
    // The next call's stream begins while the first event is still being stored, then switches stream.
    log.preview(delta('second ', 2));
    log.preview(delta('third', 3));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    gated.open();
    await log.flush();
    expect(order).toEqual(['preview:first ', 'seq:1', 'preview:second ', 'preview:third']);
  });
});
