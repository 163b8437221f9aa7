// The ControlBus port: stop and answers reach a run's handler wherever the run executes, with
// everything they carry, and a command for a run that is not there gets the "nothing" outcome.
// One suite, two adapters: in one process, and across two instances (PostgreSQL leases, Redis).
import { randomUUID } from 'node:crypto';
import {
  Cluster,
  type ControlCommand,
  type ControlOutcome,
  InProcessControlBus,
  type Logger,
  openSqlStore,
  type PostgresDatabase,
  type SqlStore,
} from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';

type Handler = (command: ControlCommand) => ControlOutcome;

/** A bus as the core uses it: a run's side attaches where the run executes; a client's side sends from where it is. */
interface BusUnderTest {
  name: string;
  setup(): Promise<void>;
  attach(sessionId: string, runId: string, handler: Handler): Promise<() => void>;
  send(sessionId: string, runId: string, command: ControlCommand): Promise<ControlOutcome>;
  teardown(): Promise<void>;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

function inProcess(): BusUnderTest {
  const bus = new InProcessControlBus();
  return {
    name: 'in one process',
    setup: async () => undefined,
    attach: async (_sessionId, runId, handler) => bus.attach(runId, handler),
    send: (_sessionId, runId, command) => bus.send(runId, command),
    teardown: async () => undefined,
  };
}

/** The run executes on instance A (which holds its session's lease); commands are sent from instance B. */
function acrossInstances(pg: string, redisUrl: string): BusUnderTest {
  let database: { db: PostgresDatabase; url: string; drop: () => Promise<void> } | undefined;
  let store: SqlStore | undefined;
  let a: Cluster | undefined;
  let b: Cluster | undefined;
  return {
    name: 'across two instances (PostgreSQL leases, Redis)',
    async setup() {
      database = await freshPostgresDatabase(pg);
      store = await openSqlStore(database.db);
      const cluster = (id: string) =>
        new Cluster({ databaseUrl: database!.url, redisUrl, instanceId: `${id}-${randomUUID().slice(0, 8)}`, leaseMs: 30_000 }, silent);
      a = cluster('a');
      b = cluster('b');
      await Promise.all([a.start(), b.start()]);
    },
    async attach(sessionId, runId, handler) {
      await store!.createSession(sessionId);
      await store!.createRun({ id: runId, sessionId, strategy: 'roa', maxSteps: 1 });
      expect(await a!.lease.claim(sessionId, runId)).toBe(true);
      return a!.controlBus.attach(runId, handler);
    },
    send: (sessionId, _runId, command) => b!.messages.sendToSession(sessionId, command),
    async teardown() {
      for (const cluster of [a, b]) await cluster?.close().catch(() => undefined);
      await database?.drop();
    },
  };
}

const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;
if ((!pg || !redisUrl) && process.env.REQUIRE_POSTGRES === '1') throw new Error('PostgreSQL and Redis are needed: run the suite with the test command');
const adapters: BusUnderTest[] = [inProcess(), ...(pg && redisUrl ? [acrossInstances(pg, redisUrl)] : [])];

describe.each(adapters)('the control bus $name', (bus) => {
  beforeAll(() => bus.setup(), 60_000);
  afterAll(() => bus.teardown(), 60_000);

  it('delivers a stop to the run’s handler and brings back its outcome', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    const seen: ControlCommand[] = [];
    const detach = await bus.attach(sessionId, runId, (command) => {
      seen.push(command);
      return { type: 'stop', outcome: 'stopping' };
    });
    try {
      expect(await bus.send(sessionId, runId, { type: 'stop', reason: 'user', by: { id: 'rosa', name: 'Rosa' } })).toEqual({
        type: 'stop',
        outcome: 'stopping',
      });
      expect(seen).toEqual([{ type: 'stop', reason: 'user', by: { id: 'rosa', name: 'Rosa' } }]);
    } finally {
      detach();
    }
  });

  it('delivers an answer whole (its question, its typed answer, who gave it) and brings back a refusal with its reason', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    const seen: ControlCommand[] = [];
    const detach = await bus.attach(sessionId, runId, (command) => {
      seen.push(command);
      return command.type === 'answer' && command.answer.kind === 'approval' && command.answer.approval.decision === 'approve'
        ? { type: 'answer', outcome: 'answered' }
        : { type: 'answer', outcome: 'invalid_arguments', message: 'arguments.name: expected a string' };
    });
    try {
      const answer: ControlCommand = {
        type: 'answer',
        answer: { kind: 'approval', approval: { decision: 'approve', arguments: { name: 'é.txt', size: 3 }, remember: 'run' } },
        questionId: 'q_1',
        by: { id: 'alice', name: 'Alice' },
      };
      expect(await bus.send(sessionId, runId, answer)).toEqual({ type: 'answer', outcome: 'answered' });
      expect(seen).toEqual([answer]);
      expect(await bus.send(sessionId, runId, { type: 'answer', answer: { kind: 'text', text: 'ü' }, questionId: 'q_1' })).toEqual({
        type: 'answer',
        outcome: 'invalid_arguments',
        message: 'arguments.name: expected a string',
      });
    } finally {
      detach();
    }
  });

  it('answers "nothing to do" for a run that is not there, and once its handler is detached', async () => {
    const sessionId = randomUUID();
    const runId = randomUUID();
    expect(await bus.send(randomUUID(), randomUUID(), { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'no_active_run' });
    expect(await bus.send(randomUUID(), randomUUID(), { type: 'answer', answer: { kind: 'text', text: 'x' } })).toEqual({
      type: 'answer',
      outcome: 'no_pending_input',
    });
    const detach = await bus.attach(sessionId, runId, () => ({ type: 'stop', outcome: 'stopping' }));
    detach();
    expect(await bus.send(sessionId, runId, { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'no_active_run' });
  });

  it('keeps runs apart: each command reaches its own run only', async () => {
    const runs = [0, 1, 2].map(() => ({ sessionId: randomUUID(), runId: randomUUID(), seen: [] as string[] }));
    const detaches = await Promise.all(
      runs.map((run) =>
        bus.attach(run.sessionId, run.runId, (command) => {
          if (command.type === 'answer' && command.answer.kind === 'text') run.seen.push(command.answer.text);
          return { type: 'answer', outcome: 'answered' };
        }),
      ),
    );
    try {
      await Promise.all(
        runs.flatMap((run, index) =>
          [1, 2].map((n) => bus.send(run.sessionId, run.runId, { type: 'answer', answer: { kind: 'text', text: `run ${index} answer ${n}` } })),
        ),
      );
      for (const [index, run] of runs.entries()) expect(run.seen.sort()).toEqual([`run ${index} answer 1`, `run ${index} answer 2`]);
    } finally {
      for (const detach of detaches) detach();
    }
  });
});
