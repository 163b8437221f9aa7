import { describe, expect, it } from 'vitest';
import { observeText, reasonText, type ScriptedLlmServer, isPhaseCue } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { sharedTestStore, type TestServer } from '../helpers/stepwise.ts';
import { summarize, type TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();

async function start() {
  ({ llm, server, client } = await stepwise.start());
  return { llm, server, client };
}

/** A model that adds one with the calculator each step and answers at `target`. */
function counting(llm: ScriptedLlmServer, target: number) {
  llm.respond((request) => {
    const results = request.body.messages.filter((message) => message.role === 'tool').length;
    if (request.phase === 'chat') return { text: `Plain answer ${request.index}.` };
    if (request.phase === 'reason') return { text: reasonText(`Add one (have ${results}).`) };
    if (request.phase === 'act') return { toolCalls: [{ name: 'calculator', arguments: { expression: `${results}+1` } }] };
    if (request.phase === 'final') return { text: `Reached ${results}.` };
    return results >= target
      ? { text: observeText('Done.', { final_answer: `Counted to ${results}.`, should_continue: false }) }
      : { text: observeText(`At ${results}.`, { should_continue: true }) };
  });
}

async function say(client: TestClient, content: string, options: Record<string, unknown> = {}) {
  const from = client.events.length;
  client.chat(content, options);
  return client.untilComplete({ from });
}

async function snapshotList(server: TestServer, client: TestClient) {
  const response = await fetch(`${server.url}/api/sessions/${client.session.session_id}/snapshots`);
  return (
    (await response.json()) as { snapshots: { snapshot_id: string; kind: string; label: string; run_id: string | null; step: number | null; at_seq: number }[] }
  ).snapshots;
}

describe('snapshots and rollback', () => {
  it('snapshot, two more messages, rollback: the next model call holds nothing from after the snapshot; the list shows manual, step and rollback entries', async () => {
    const { llm, server, client } = await start();
    counting(llm, 1);
    await say(client, 'Count to one', { agent_mode: true });
    await say(client, 'Before the snapshot');

    let from = client.events.length;
    client.send({ type: 'snapshot_save', label: 'Checkpoint A' });
    const saved = await client.waitFor('snapshot_saved', { from });
    expect(saved).toMatchObject({ label: 'Checkpoint A', at_seq: Number(saved.seq) - 1 });

    await say(client, 'After one');
    await say(client, 'After two');
    from = client.events.length;
    client.send({ type: 'snapshot_rollback', snapshot_id: saved.snapshot_id });
    const rolled = await client.waitFor('session_rolled_back', { from });
    expect(rolled).toMatchObject({ snapshot_id: saved.snapshot_id, to_seq: saved.at_seq, new_snapshot_id: expect.any(String) });

    await say(client, 'After the rollback');
    const contents = llm.requests.at(-1)!.body.messages.map((message) => message.content ?? '');
    expect(contents).toContain('Before the snapshot');
    expect(contents).toContain('Count to one');
    expect(contents).not.toContain('After one');
    expect(contents).not.toContain('After two');

    const kinds = (await snapshotList(server, client)).map((snapshot) => snapshot.kind);
    expect(kinds).toEqual(['step', 'manual', 'rollback']);
  });

  it('rewinds a run to the end of a step and goes on from there: nothing of that step or before is asked again', async () => {
    const { llm, server, client } = await start();
    counting(llm, 3);
    const first = await say(client, 'Count to three', { agent_mode: true, agent_max_steps: 5 });
    const runId = String(first[0]!.run_id);
    const points = (await snapshotList(server, client)).filter((snapshot) => snapshot.kind === 'step');
    expect(points.map((point) => point.snapshot_id)).toEqual([`step:${runId}:1`, `step:${runId}:2`, `step:${runId}:3`]);

    const before = llm.requests.length;
    const from = client.events.length;
    client.send({ type: 'snapshot_resume', snapshot_id: `step:${runId}:1`, extra_steps: 4 });
    const rolled = await client.waitFor('session_rolled_back', { from });
    expect(rolled).toMatchObject({ snapshot_id: `step:${runId}:1` });
    const resumed = await client.untilComplete({ from });
    expect(resumed.find((event) => event.update_type === 'agent_start')).toMatchObject({ resumed_from: runId });
    expect(summarize(resumed).filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:2', 'agent_turn_start:3']);
    expect(resumed.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'Counted to 3.' });
    // Step 1 was not made again; the first call is step 2's reason, which sees step 1's result only.
    const next = llm.requests[before]!;
    expect(next.phase).toBe('reason');
    expect(next.body.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual(['1']);
    expect(next.body.messages.filter((message) => message.role === 'user' && !isPhaseCue(message.content))).toHaveLength(1);
  });

  it('refuses while a run is active (run_active) and an unknown snapshot (unknown_snapshot); nothing changes', async () => {
    const { llm, client } = await start();
    client.send({ type: 'snapshot_rollback', snapshot_id: '00000000-0000-4000-8000-000000000000' });
    expect(await client.waitFor('error')).toMatchObject({ code: 'unknown_snapshot' });
    let from = client.events.length;
    client.send({ type: 'snapshot_resume', snapshot_id: 'step:nope:1' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'unknown_snapshot' });

    llm.enqueue({ hang: true });
    from = client.events.length;
    client.chat('Think', { agent_mode: true });
    await client.waitFor('agent_turn_start', { from });
    client.send({ type: 'snapshot_save' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'run_active' });
    expect(client.events.slice(from).some((event) => event.type === 'snapshot_saved')).toBe(false);
  });

  it('a plain answer cannot be resumed from; resuming a snapshot taken after a capped run continues it', async () => {
    const { llm, client } = await start();
    counting(llm, 3);
    await say(client, 'Hello');
    let from = client.events.length;
    client.send({ type: 'snapshot_save', label: 'Plain' });
    const plain = await client.waitFor('snapshot_saved', { from });
    from = client.events.length;
    client.send({ type: 'snapshot_resume', snapshot_id: plain.snapshot_id });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'not_resumable' });

    await say(client, 'Count to three', { agent_mode: true, agent_max_steps: 2 });
    from = client.events.length;
    client.send({ type: 'snapshot_save', label: 'Capped' });
    const capped = await client.waitFor('snapshot_saved', { from });
    from = client.events.length;
    client.send({ type: 'snapshot_resume', snapshot_id: capped.snapshot_id, extra_steps: 2 });
    const resumed = await client.untilComplete({ from });
    expect(resumed.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'Counted to 3.' });
    expect(summarize(resumed).filter((name) => name.startsWith('agent_turn_start'))).toEqual(['agent_turn_start:3']);
  });

  it('a chat keeps at most 100 snapshots: the next save or rollback is refused with too_many_snapshots and nothing changes', async () => {
    ({ llm, server, client } = await stepwise.start({ MAX_MESSAGES_PER_SECOND: '1000' }));
    counting(llm, 1);
    await say(client, 'Hello');
    for (let index = 0; index < 100; index++) {
      const from = client.events.length;
      client.send({ type: 'snapshot_save', label: `s${index}` });
      await client.waitFor('snapshot_saved', { from });
    }
    const saved = (await snapshotList(server, client)).filter((snapshot) => snapshot.kind === 'manual');
    expect(saved).toHaveLength(100);
    // The history is kept once: each later snapshot names the one before it and holds nothing of its own.
    const store = await sharedTestStore();
    const first = (await store.getSnapshot(saved[0]!.snapshot_id))!;
    const lastSaved = (await store.getSnapshot(saved[99]!.snapshot_id))!;
    expect(first.messages.length).toBeGreaterThan(0);
    expect(lastSaved).toMatchObject({ base: { id: saved[98]!.snapshot_id, count: first.messages.length }, messages: [] });
    let from = client.events.length;
    client.send({ type: 'snapshot_save', label: 'one too many' });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'too_many_snapshots' });
    from = client.events.length;
    client.send({ type: 'snapshot_rollback', snapshot_id: saved[0]!.snapshot_id });
    expect(await client.waitFor('error', { from })).toMatchObject({ code: 'too_many_snapshots' });
    expect(client.events.slice(from).some((event) => event.type === 'session_rolled_back')).toBe(false);
    expect((await snapshotList(server, client)).filter((snapshot) => snapshot.kind !== 'step')).toHaveLength(100);
  });
});
