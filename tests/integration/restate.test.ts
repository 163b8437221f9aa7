import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../fixtures/mcp-servers.ts';
import { observeText, reasonText, type RecordedRequest, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { computeThenAsk, scriptFirstActHanging } from '../helpers/calculating-model.ts';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess } from '../helpers/process.ts';
import { plannedStage, researchModel } from '../helpers/research-script.ts';
import { useRestate } from '../helpers/restate.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

type Event = Record<string, unknown>;

const restate = useRestate();
const processes = useServerProcesses();

/** A scripted model, and the environment of a Stepwise process on Restate against it: its own data dir and service port, kept across restarts. */
async function restateEnv(): Promise<{ env: Record<string, string>; llm: ScriptedLlmServer }> {
  const llm = processes.open(await ScriptedLlmServer.start());
  const env = {
    RUN_ENGINE: 'restate',
    RESTATE_INGRESS_URL: restate().ingressUrl,
    RESTATE_ADMIN_URL: restate().adminUrl,
    RESTATE_SERVICE_PORT: String(await freePort()),
    DATA_DIR: processes.folder('stepwise-restate-run-'),
    LLM_PROVIDER: 'openai',
    OPENAI_BASE_URL: llm.url,
    OPENAI_API_KEY: 'k',
    LLM_MAX_RETRIES: '0',
  };
  return { env, llm };
}

async function connect(wsUrl: string, query: Record<string, string | number> = {}): Promise<TestClient> {
  return processes.socket(await TestClient.connect(wsUrl, query));
}

/** What Restate's ingress answers for the run's workflow output, asked again while it answers 470 (the workflow still runs). */
async function workflowOutput(runId: string): Promise<Response> {
  const url = `${restate().ingressUrl}/restate/workflow/StepwiseRun/${runId}/output`;
  let output = await fetch(url);
  for (let tries = 0; output.status === 470 && tries < 300; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    output = await fetch(url);
  }
  return output;
}

/** A model call by what it was for (its purpose and, inside a branch, the branch) and what it sent. */
const callKey = (request: RecordedRequest) => `${request.purpose}@${request.node ?? ''}`;
const fingerprint = (request: RecordedRequest) => `${callKey(request)} ${JSON.stringify(request.body.messages)}`;
const seqs = (client: TestClient) => client.logged.map((event) => (event as Event).seq as number);

describe('runs as Restate workflows (RUN_ENGINE=restate)', { timeout: PROCESS_TEST_TIMEOUT_MS * 2 }, () => {
  it('a research run killed with -9 goes on after the restart: each completed model call made once, the call in flight again, a question pending across the restart answered afterwards', async () => {
    const { env, llm } = await restateEnv();
    let hangTask12 = true;
    llm.respond(
      researchModel({
        stages: [plannedStage('1', 'Only', ['1.1', '1.2'])],
        task: (request) => {
          if (request.node === '1.2') return hangTask12 ? { hang: true } : { text: 'finding of 1.2' };
          const asked = request.body.messages.some((message) => message.role === 'tool');
          return asked ? { text: 'finding of 1.1' } : { toolCalls: [{ name: 'request_input', arguments: { question: 'Which tower?' } }] };
        },
      }),
    );
    const first = await startStepwiseProcess(env);
    const before = await connect(first.wsUrl);
    const sessionId = before.session.session_id;
    before.chat('How tall is the tower?', { agent_mode: true, strategy: 'research' });
    const question = (await before.waitFor('agent_request_input', { timeoutMs: 60_000 })) as Event;
    expect(question).toMatchObject({ node_id: '1.1', question: 'Which tower?' });
    const inFlight = await llm.waitFor((request) => request.purpose === 'research.task' && request.node === '1.2', 60_000);
    const completedBeforeKill = llm.requests.filter((request) => request !== inFlight);
    await first.kill();

    hangTask12 = false;
    const second = await startStepwiseProcess(env);
    const after = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
    // The session is busy with the run from the restart on, before Restate executes it again: a chat waits for it (and is withdrawn).
    after.chat('Something else', { agent_mode: true });
    const waiting = await after.waitFor('message_queued');
    after.send({ type: 'cancel_message', message_id: waiting.message_id });
    expect(await after.waitFor('message_cancelled')).toMatchObject({ message_id: waiting.message_id });
    // Answered after the restart, whether or not Restate has the run executing again yet.
    after.send({ type: 'agent_user_input', content: 'The Eiffel Tower', question_id: question.question_id });
    const events = (await after.untilComplete({ timeoutMs: 90_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(after.events.filter((event) => event.type === 'error').map((event) => event.code)).toEqual([]);

    // Every call completed before the kill was not made again; the one in flight was, once.
    expect(completedBeforeKill.map(callKey)).toEqual(expect.arrayContaining(['research.plan@', 'research.task@1.1']));
    const made = llm.requests.map(fingerprint);
    for (const request of completedBeforeKill)
      expect({ call: callKey(request), times: made.filter((one) => one === fingerprint(request)).length }).toEqual({ call: callKey(request), times: 1 });
    expect(made.filter((one) => one === fingerprint(inFlight))).toHaveLength(2);
    const resumed = llm.requests.filter((request) => request.purpose === 'research.task' && request.node === '1.1').at(-1)!;
    expect(resumed.body.messages.some((message) => message.role === 'tool' && message.content === 'The Eiffel Tower')).toBe(true);
    // The session's log reads as one run: one agent_start, gapless seqs, the question shown once.
    expect(after.logged.filter((event) => event.update_type === 'agent_start')).toHaveLength(1);
    expect(after.logged.filter((event) => event.update_type === 'agent_request_input')).toHaveLength(1);
    expect(seqs(after).every((seq, index) => seq === index + 1)).toBe(true);
    // The question has its answer: a second one is refused, not kept.
    const from = after.events.length;
    after.send({ type: 'agent_user_input', content: 'Another tower', question_id: question.question_id });
    expect(await after.waitFor('error', { from })).toMatchObject({ code: 'no_pending_input' });
  });

  it('a question nobody answered in time parks the run; the answer resumes it, no completed call made again', async () => {
    const { env, llm } = await restateEnv();
    llm.enqueue(...computeThenAsk(), { text: observeText('Blue it is.', { final_answer: '42, in blue.' }) });
    const server = await startStepwiseProcess({ ...env, AGENT_INPUT_TIMEOUT_MS: '1000' });
    const client = await connect(server.wsUrl);
    client.chat('Compute and ask me', { agent_mode: true });
    const question = await client.waitFor('agent_request_input', { timeoutMs: 60_000 });
    await client.waitFor('agent_parked', { timeoutMs: 60_000 });
    client.send({ type: 'agent_user_input', question_id: question.question_id, content: 'blue' });
    const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(llm.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'observe']);
    expect(events.filter((event) => event.type === 'tool_complete' && event.tool_name === 'calculator')).toHaveLength(1);
  });

  it('SIGTERM hands the run over: nothing ends it, and the restarted process finishes it without repeating a completed call', async () => {
    const { env, llm } = await restateEnv();
    scriptFirstActHanging(llm);
    const first = await startStepwiseProcess(env);
    const before = await connect(first.wsUrl);
    const sessionId = before.session.session_id;
    before.chat('What is 6*7?', { agent_mode: true });
    const act = await llm.waitFor((request) => request.phase === 'act', 60_000);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    await llm.waitForAbort(act, 10_000);
    expect(summarize(before.events)).not.toContain('agent_stopped:shutdown');

    const second = await startStepwiseProcess(env);
    const after = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
    const events = (await after.untilComplete({ timeoutMs: 90_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(summarize(events).filter((name) => name.startsWith('agent_stopped'))).toEqual([]);
    expect(llm.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'act', 'observe']);
  });

  it('stop aborts the in-flight model call and cancels the run’s workflow in Restate', async () => {
    const { env, llm } = await restateEnv();
    llm.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working.') }));
    const server = await startStepwiseProcess(env);
    const client = await connect(server.wsUrl);
    client.chat('Long job', { agent_mode: true });
    const start = (await client.waitFor('agent_start', { timeoutMs: 60_000 })) as Event;
    const act = await llm.waitFor((request) => request.phase === 'act', 60_000);
    client.send({ type: 'agent_control', action: 'stop' });
    await llm.waitForAbort(act, 10_000);
    const events = (await client.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    // The workflow has ended in Restate: nothing of the run is ever retried.
    expect([200, 409]).toContain((await workflowOutput(start.run_id as string)).status);
    const health = await (await fetch(`${server.url}/api/health`)).json();
    expect(health).toMatchObject({ status: 'ok', dependencies: { restate: true } });
  });

  it('on Node 22 as on Node 20 (which needs the Promise.withResolvers polyfill), a run executes as a workflow and answers', async () => {
    const { env } = await restateEnv();
    // Node 22 from the npm registry, as `npx -y node@22` gets it.
    const node22 = execFileSync('npx', ['-y', 'node@22', '-e', 'process.stdout.write(process.execPath)'], {
      encoding: 'utf8',
      timeout: 240_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    for (const node of [process.execPath, node22]) {
      const server = await startStepwiseProcess({ ...env, LLM_PROVIDER: 'demo', RESTATE_SERVICE_PORT: String(await freePort()) }, { node });
      const client = await connect(server.wsUrl);
      client.chat('What is 6*7?', { agent_mode: true });
      const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
      expect({ node, ending: summarize(events).slice(-2) }).toEqual({ node, ending: ['agent_completion:answered', 'response_complete'] });
      await server.kill();
    }
    expect(execFileSync(node22, ['--version'], { encoding: 'utf8' })).toMatch(/^v22\./);
  });

  it('every strategy runs as a workflow on the demo model, and plain chat too; a run refused by an unreachable Restate says why', async () => {
    const { env } = await restateEnv();
    const server = await startStepwiseProcess({ ...env, LLM_PROVIDER: 'demo' });
    const client = await connect(server.wsUrl);
    const runs: Array<[string, Record<string, unknown>, string]> = [
      ['Hello', {}, 'response_complete'],
      ['What is 6*7?', { agent_mode: true, strategy: 'plan_execute' }, 'agent_completion:answered'],
      ['tell three short facts about octopus and keep a list', { agent_mode: true, strategy: 'autonomous' }, 'agent_completion:workflow_complete'],
      ['Problem: what is (17+25)*3?', { agent_mode: true, strategy: 'solver', strategy_options: { auto_advance: true } }, 'agent_completion:answered'],
      ['What is 12*7?', { agent_mode: true, strategy: 'research' }, 'agent_completion:answered'],
      ['Go on', { agent_mode: true, strategy: 'research' }, 'agent_completion:answered'],
      ['What is 6*7?', { agent_mode: true }, 'agent_completion:answered'],
    ];
    let events: Event[] = [];
    for (const [content, options, ending] of runs) {
      const from = client.events.length;
      client.chat(content, options);
      events = (await client.untilComplete({ from, timeoutMs: 60_000 })) as Event[];
      expect({
        content,
        options,
        ending:
          summarize(events)
            .filter((name) => name !== 'response_complete')
            .at(-1) ?? 'response_complete',
      }).toEqual({ content, options, ending: ending === 'response_complete' ? 'assistant_message' : ending });
    }
    const start = events.find((event) => event.update_type === 'agent_start')!;
    // The workflow returns just after the run's last event.
    const output = await workflowOutput(start.run_id as string);
    expect(output.status).toBe(200);
    expect(await output.json()).toBe('completed');

    // Restate's ingress unreachable (its admin API is, so the server starts): the run fails, saying why.
    const lost = await startStepwiseProcess({
      ...env,
      LLM_PROVIDER: 'demo',
      RESTATE_INGRESS_URL: `http://127.0.0.1:${await freePort()}`,
      RESTATE_SERVICE_PORT: String(await freePort()),
      DATA_DIR: join(env.DATA_DIR!, 'second'),
    });
    const refused = await connect(lost.wsUrl);
    refused.chat('What is 6*7?', { agent_mode: true });
    const failed = (await refused.untilComplete({ timeoutMs: 60_000 })) as Event[];
    expect(failed.find((event) => event.update_type === 'agent_error')).toMatchObject({ message: expect.stringContaining('Restate is not reachable') });
  });
});
