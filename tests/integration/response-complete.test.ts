import { describe, expect, it } from 'vitest';
import { freePort } from '../fixtures/mcp-servers.ts';
import { observeText, reasonText, type RecordedRequest, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { chatsBackToBack } from '../helpers/back-to-back.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, type StepwiseProcess } from '../helpers/process.ts';
import { useRestate } from '../helpers/restate.ts';
import { TestClient } from '../helpers/ws-client.ts';

// `response_complete` means the session is free: a client that sends its next message the instant
// it arrives is never refused with run_active, whatever ended the run and wherever it ran.

const ROUNDS = 50;
const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;

let llm: ScriptedLlmServer | undefined;
const processes = useServerProcesses();

async function connect(instance: StepwiseProcess, query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(instance.wsUrl, query);
  return processes.socket(client);
}

/** The scripted model behind an instance; a client here sends faster than the default rate limit allows. */
async function scriptedModel(): Promise<Record<string, string>> {
  llm = processes.open(await ScriptedLlmServer.start());
  return { LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', LLM_MAX_RETRIES: '0', MAX_MESSAGES_PER_SECOND: '1000' };
}

/** A data folder of its own, for an instance on the embedded database. */
function dataDir(): Record<string, string> {
  return { DATA_DIR: processes.folder('stepwise-back-to-back-') };
}

/** Every act call hangs until the run is stopped. */
function hangingActs(): void {
  llm!.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working on it.') }));
}

/** Every run answers by itself in one step. */
function answeringRuns(): void {
  llm!.respond((request) => {
    if (request.phase === 'act') return { text: 'No tool needed.' };
    if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: 'Done.' }) };
    return { text: reasonText('Answer at once.') };
  });
}

/** Waits for the act call of `round` (the round-th act call the model server saw). */
async function actOfRound(round: number): Promise<RecordedRequest> {
  return llm!.waitFor((request) => llm!.requests.filter((each) => each.phase === 'act').indexOf(request) === round, 30_000);
}

/** Runs that `stopper` stops once each is in its act call, sent back to back on `client`. */
async function stoppedBackToBack(client: TestClient, stopper: TestClient) {
  return chatsBackToBack([client], ROUNDS, {
    chat: (round) => ({ content: `Long job ${round}`, agent_mode: true }),
    each: async (round) => {
      await actOfRound(round);
      stopper.send({ type: 'agent_control', action: 'stop' });
    },
  });
}

const answeredBackToBack = (...clients: TestClient[]) =>
  chatsBackToBack(clients, ROUNDS, { chat: (round) => ({ content: `Quick job ${round}`, agent_mode: true }) });

/** Two instances on a fresh PostgreSQL database and Redis, the scripted model behind both. */
async function twoInstances(extra: Record<string, string> = {}): Promise<[StepwiseProcess, StepwiseProcess]> {
  const database = await freshPostgresDatabase(pg!);
  await database.db.close();
  processes.open({ close: database.drop });
  const model = await scriptedModel();
  const env = (id: string) => ({ ...model, DATABASE_URL: database.url, REDIS_URL: redisUrl!, INSTANCE_ID: id, CLUSTER_LEASE_MS: '1500', ...extra });
  return Promise.all([startStepwiseProcess(env('a')), startStepwiseProcess(env('b'))]);
}

/** A socket on A in a stored session (an edit of its todo list stores it), and one on B in the same session. */
async function socketsInOneSession(a: StepwiseProcess, b: StepwiseProcess): Promise<[TestClient, TestClient]> {
  const onA = await connect(a);
  onA.send({ type: 'todos_set', todos: [] });
  await onA.waitFor('agent_todos');
  const onB = await connect(b, { session_id: onA.session.session_id, after_seq: 0 });
  expect(onB.session.session_id).toBe(onA.session.session_id);
  return [onA, onB];
}

describe('response_complete means the session is free', { timeout: PROCESS_TEST_TIMEOUT_MS * 2 }, () => {
  describe('on one instance', () => {
    it('a chat sent the instant a stopped run completes is accepted, 50 times in a row', async () => {
      const instance = await startStepwiseProcess({ ...(await scriptedModel()), ...dataDir() });
      hangingActs();
      const client = await connect(instance);
      const stopper = await connect(instance, { session_id: client.session.session_id, after_seq: 0 });
      expect(await stoppedBackToBack(client, stopper)).toEqual({ completed: ROUNDS, errors: [] });
    });

    it('a chat sent the instant a run answers is accepted, 50 times in a row', async () => {
      const instance = await startStepwiseProcess({ ...(await scriptedModel()), ...dataDir() });
      answeringRuns();
      expect(await answeredBackToBack(await connect(instance))).toEqual({ completed: ROUNDS, errors: [] });
    });
  });

  describe.skipIf(!pg || !redisUrl)('on two instances (PostgreSQL and Redis)', () => {
    it('a chat at A sent the instant A delivers the response_complete of a run stopped from B is accepted, 50 times in a row', async () => {
      const [a, b] = await twoInstances();
      hangingActs();
      const [onA, onB] = await socketsInOneSession(a, b);
      expect(await stoppedBackToBack(onA, onB)).toEqual({ completed: ROUNDS, errors: [] });
    });

    it('chats sent in turn at A and B, each the instant its instance delivers the last run’s response_complete, are accepted, 50 in a row', async () => {
      const [a, b] = await twoInstances();
      answeringRuns();
      const [onA, onB] = await socketsInOneSession(a, b);
      expect(await answeredBackToBack(onA, onB)).toEqual({ completed: ROUNDS, errors: [] });
    });
  });

  describe.skipIf(!pg || !redisUrl)('on two instances, whatever ended the run', () => {
    const ENDINGS = ['answered', 'stopped', 'failed', 'timed_out'] as const;
    /** The ending a request's run is scripted for: its chat names it ("Job 7 failed"), the latest chat the latest. */
    const endingOf = (request: RecordedRequest) => {
      const jobs = request.body.messages.flatMap((message) => [...(message.content ?? '').matchAll(/Job (\d+) (\w+)/g)]);
      return jobs.sort((x, y) => Number(x[1]) - Number(y[1])).at(-1)?.[2];
    };

    it('chats sent in turn at A and B the instant a run answered, was stopped from the other, failed or timed out waiting for input are accepted, 48 in a row', async () => {
      const [a, b] = await twoInstances({ AGENT_INPUT_TIMEOUT_MS: '200' });
      llm!.respond((request) => {
        const ending = endingOf(request);
        if (ending === 'failed') return { status: 400 };
        if (request.phase === 'act') {
          if (ending === 'stopped') return { hang: true };
          if (ending === 'timed_out') return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which one?' } }] };
          return { text: 'No tool needed.' };
        }
        if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: 'Done.' }) };
        return { text: reasonText('On it.') };
      });
      const [onA, onB] = await socketsInOneSession(a, b);
      const rounds = 48;
      const result = await chatsBackToBack([onA, onB], rounds, {
        chat: (round) => ({ content: `Job ${round} ${ENDINGS[round % ENDINGS.length]}`, agent_mode: true }),
        each: async (round) => {
          if (ENDINGS[round % ENDINGS.length] !== 'stopped') return;
          await llm!.waitFor(
            (request) =>
              request.phase === 'act' && endingOf(request) === 'stopped' && request.body.messages.some((message) => message.content?.includes(`Job ${round} `)),
            30_000,
          );
          // Stopped from the instance that did not send it.
          (round % 2 === 0 ? onB : onA).send({ type: 'agent_control', action: 'stop' });
        },
      });
      expect(result).toEqual({ completed: rounds, errors: [] });
      const endings = onA.events.filter((event) => ['agent_completion', 'agent_stopped', 'agent_error'].includes(String(event.update_type)));
      expect(endings.map((event) => (event.update_type === 'agent_stopped' ? `stopped:${String(event.reason)}` : String(event.update_type)))).toEqual(
        Array.from(
          { length: rounds },
          (_, round) =>
            ({ answered: 'agent_completion', stopped: 'stopped:user', failed: 'agent_error', timed_out: 'stopped:input_timeout' })[
              ENDINGS[round % ENDINGS.length]!
            ],
        ),
      );
    });
  });

  describe('with RUN_ENGINE=restate', () => {
    const restate = useRestate();

    const restateInstance = async () =>
      startStepwiseProcess({
        ...(await scriptedModel()),
        ...dataDir(),
        RUN_ENGINE: 'restate',
        RESTATE_INGRESS_URL: restate().ingressUrl,
        RESTATE_ADMIN_URL: restate().adminUrl,
        RESTATE_SERVICE_PORT: String(await freePort()),
      });

    it('a chat sent the instant a stopped run completes is accepted, 50 times in a row', async () => {
      const instance = await restateInstance();
      hangingActs();
      const client = await connect(instance);
      const stopper = await connect(instance, { session_id: client.session.session_id, after_seq: 0 });
      expect(await stoppedBackToBack(client, stopper)).toEqual({ completed: ROUNDS, errors: [] });
    });

    it('a chat sent the instant a run answers is accepted, 50 times in a row', async () => {
      const instance = await restateInstance();
      answeringRuns();
      expect(await answeredBackToBack(await connect(instance))).toEqual({ completed: ROUNDS, errors: [] });
    });
  });
});
