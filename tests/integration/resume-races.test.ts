// Resume, snapshots and options sent by a hostile or hasty client: one run at a time, clean refusals.
import { afterEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function setup(env: Record<string, string> = {}) {
  const llm = await ScriptedLlmServer.start();
  cleanups.push(() => llm.close());
  const server: TestServer = await startStepwiseWithModel(llm.url, env);
  cleanups.push(() => server.close());
  const client = await TestClient.connect(server.wsUrl);
  cleanups.push(() => client.close());
  return { llm, server, client };
}

function counting(llm: ScriptedLlmServer, hold: { observeAt: number }) {
  llm.respond((request) => {
    const results = request.body.messages.filter((message) => message.role === 'tool').length;
    if (request.phase === 'observe' && results === hold.observeAt) return { hang: true };
    if (request.phase === 'reason') return { text: reasonText(`Add one (have ${results}).`) };
    if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` } }] };
    if (request.phase === 'final') return { text: `Got to ${results}.` };
    if (request.phase === 'chat') return { text: 'plain answer' };
    return results >= 3
      ? { text: observeText('Enough.', { final_answer: `Counted to ${results}.`, should_continue: false }) }
      : { text: observeText(`At ${results}.`, { should_continue: true }) };
  });
}

async function stoppedRun(llm: ScriptedLlmServer, client: TestClient) {
  client.chat('Count', { agent_mode: true, agent_max_steps: 6, tools: ['calculator'] });
  await llm.waitFor((request) => request.phase === 'observe' && request.body.messages.filter((m) => m.role === 'tool').length === 2);
  client.send({ type: 'agent_control', action: 'stop' });
  return client.untilComplete();
}

/** The session's first snapshot taken at a step (a stopped run leaves them). */
async function stepSnapshot(server: TestServer, client: TestClient): Promise<{ snapshot_id: string }> {
  const { snapshots } = (await (await fetch(`${server.url}/api/sessions/${client.session.session_id}/snapshots`)).json()) as {
    snapshots: { snapshot_id: string; kind: string }[];
  };
  return snapshots.find((snapshot) => snapshot.kind === 'step')!;
}

const errors = (client: TestClient, from: number) =>
  client.events
    .slice(from)
    .filter((event) => event.type === 'error')
    .map((event) => event.code);
/** The runs started since `from`. */
const started = (client: TestClient, from: number) =>
  client.events
    .slice(from)
    .filter((event) => event.update_type === 'agent_start')
    .map((event) => event.run_id);
/** Waits until `count` answers to commands sent since `from` came: by default a refusal, a rollback or a run's start. */
const outcomes = (
  client: TestClient,
  from: number,
  count: number,
  answer = (event: Record<string, unknown>) => event.type === 'error' || event.type === 'session_rolled_back' || event.update_type === 'agent_start',
) => client.waitUntil(() => (client.events.slice(from).filter(answer).length >= count ? true : undefined));

/** A run stopped after a step, a snapshot of that step, and where the client's events stand. */
async function stoppedWithSnapshot() {
  const { llm, client, server } = await setup();
  const hold = { observeAt: 2 };
  counting(llm, hold);
  await stoppedRun(llm, client);
  hold.observeAt = -1;
  const point = await stepSnapshot(server, client);
  return { llm, client, server, point, from: client.events.length };
}

describe('client messages', () => {
  it('snapshot_rollback and resume sent together: one is refused, no run starts during the rollback', async () => {
    const { client, point, from } = await stoppedWithSnapshot();
    client.send({ type: 'snapshot_rollback', snapshot_id: point.snapshot_id });
    client.send({ type: 'agent_control', action: 'resume' });
    // Each of the two gets its answer: the rollback done or refused, the resume's run started or refused.
    await outcomes(client, from, 2);
    if (started(client, from).length > 0) await client.untilComplete({ from });
    const names = summarize(client.events.slice(from));
    // Either the resume is refused (run_active while the rollback holds the session; not_resumable
    // if the rollback had already ended the stopped run's continuation) or the rollback is: never both.
    expect(names.includes('session_rolled_back') !== names.includes('agent_start')).toBe(true);
    expect([['run_active'], ['not_resumable']]).toContainEqual(errors(client, from));
  });

  it('a chat message and snapshot_rollback sent together: one is refused, no run starts during the rollback', async () => {
    const { client, point, from } = await stoppedWithSnapshot();
    // An agent run, so that a run started shows as one (agent_start).
    client.chat('A question', { agent_mode: true });
    client.send({ type: 'snapshot_rollback', snapshot_id: point.snapshot_id });
    // Each of the two gets its answer: the rollback done or refused, the chat's run started or refused.
    await outcomes(client, from, 2);
    if (started(client, from).length > 0) await client.untilComplete({ from });
    const names = summarize(client.events.slice(from));
    expect({ rolledBack: names.includes('session_rolled_back'), ran: names.includes('agent_start'), errors: errors(client, from) }).toMatchObject({
      errors: ['run_active'],
    });
    expect(names.includes('session_rolled_back') !== names.includes('agent_start')).toBe(true);
  });

  it('snapshot_resume and resume sent together never run two runs of one session at once', async () => {
    const { llm, client, server } = await setup();
    const hold = { observeAt: 2 };
    counting(llm, hold);
    await stoppedRun(llm, client);
    hold.observeAt = 3; // the new run(s) wait in step 3's observe
    const point = await stepSnapshot(server, client);
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    client.send({ type: 'snapshot_resume', snapshot_id: point.snapshot_id });
    // Each command's answer: its run started, or refused. A run started waits in step 3's observe.
    await outcomes(client, from, 2, (event) => event.type === 'error' || event.update_type === 'agent_start');
    const starts = started(client, from);
    expect(starts.length).toBe(1);
    expect(errors(client, from)).toEqual(['run_active']);
    const held = await llm.waitFor((request) => request.phase === 'observe' && request.body.messages.filter((m) => m.role === 'tool').length === 3);
    // The stop reaches the one run: it ends, its model call is cut, and nothing is left going.
    const at = client.events.length;
    client.send({ type: 'agent_control', action: 'stop' });
    const ended = await client.untilComplete({ from: at });
    expect(ended.at(-1)).toMatchObject({ type: 'response_complete', run_id: starts[0] });
    client.send({ type: 'agent_control', action: 'stop' });
    expect(await client.next((event) => event.type === 'error', { from: client.events.length })).toMatchObject({ code: 'no_active_run' });
    await llm.waitForAbort(held);
    expect(llm.requests.filter((request) => request.phase === 'observe' && request.body.messages.filter((m) => m.role === 'tool').length === 3)).toHaveLength(
      1,
    );
  });

  it('resume that can add no step (already at AGENT_MAX_STEPS_LIMIT) is refused rather than replaying to the same end', async () => {
    const { llm, client } = await setup({ AGENT_MAX_STEPS_LIMIT: '2' });
    counting(llm, { observeAt: -1 });
    client.chat('Count', { agent_mode: true, agent_max_steps: 2, tools: ['calculator'] });
    const first = await client.untilComplete();
    expect(first.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'max_steps' });
    const before = llm.requests.length;
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 5 });
    await outcomes(client, from, 1, (event) => event.type === 'error' || event.update_type === 'agent_start');
    expect({ errors: errors(client, from), after: summarize(client.events.slice(from)), calls: llm.requests.length - before }).toEqual({
      errors: ['not_resumable'],
      after: ['error:not_resumable'],
      calls: 0,
    });
  });

  it('hostile messages: nothing crashes and the session takes a message afterwards', async () => {
    const { llm, client } = await setup();
    counting(llm, { observeAt: -1 });
    const from = client.events.length;
    const hostile: unknown[] = [
      { type: 'agent_control', action: 'resume', run_id: '00000000-0000-4000-8000-000000000000' },
      { type: 'agent_control', action: 'resume', extra_steps: 1e300 },
      { type: 'agent_control', action: 'resume', extra_steps: Number.MAX_SAFE_INTEGER },
      { type: 'agent_control', action: 'resume', extra_steps: -5 },
      { type: 'chat', content: 'x', agent_mode: true, strategy_options: [] },
      { type: 'chat', content: 'x', agent_mode: true, strategy_options: null },
      { type: 'chat', content: 'x', agent_mode: true, strategy_options: 'a' },
      { type: 'chat', content: 'x', agent_mode: true, strategy_options: { nope: 1 } },
      '{"type":"chat","content":"x","agent_mode":true,"strategy_options":{"__proto__":{"polluted":1}}}',
      '{"type":"chat","content":"x","agent_mode":true,"strategy":"plan_execute","strategy_options":{"__proto__":{"replan":"x"}}}',
      { type: 'chat', content: 'x', agent_mode: true, strategy: 'chat' },
      { type: 'chat', content: 'x', agent_mode: true, strategy: 'example' },
      { type: 'chat', content: 'x', agent_mode: true, strategy: '__proto__' },
      { type: 'chat', content: 'x', agent_mode: true, strategy: 'constructor' },
      { type: 'agent_user_input', content: 'x', question_id: 'q_x' },
    ];
    const replies: string[] = [];
    for (const message of hostile) {
      const at0 = client.events.length;
      client.send(message);
      const reply = await client.next((event) => event.type === 'error' || event.update_type === 'agent_start', { from: at0, timeoutMs: 3_000 });
      replies.push(
        `${typeof message === 'string' ? message.slice(0, 90) : JSON.stringify(message).slice(0, 90)} -> ${reply.type}:${reply.code ?? ''} ${reply.message ?? JSON.stringify(reply.options)}`,
      );
      if (reply.update_type === 'agent_start') await client.untilComplete({ from: at0 });
    }
    console.log(`replies:\n${replies.join('\n')}`);
    // '__proto__' as strategy options must not be accepted as a run.
    const started = client.events.slice(from).filter((event) => event.update_type === 'agent_start');
    const at = client.events.length;
    client.chat('plain', {});
    const events = await client.untilComplete({ from: at, timeoutMs: 5_000 });
    expect(events.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'plain answer' });
    // Holds: nothing crashed; '__proto__' options are dropped silently (not refused as unknown), nothing polluted.
    expect(JSON.stringify(started.map((event) => event.options))).not.toContain('polluted');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
