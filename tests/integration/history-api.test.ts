import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { randomUUID } from 'node:crypto';
import { sharedTestStore, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;

beforeEach(async () => {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url);
});

afterEach(async () => {
  await server?.close();
  await llm?.close();
});

async function api(path: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${path}`, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function sessionWithOneRun(question: string): Promise<{ client: TestClient; id: string }> {
  const client = await TestClient.connect(server.wsUrl);
  llm.enqueue(
    { text: reasonText('Compute.') },
    { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] },
    { text: observeText('42.', { final_answer: 'It is 42.' }), usage: { prompt_tokens: 11, completion_tokens: 4 } },
  );
  client.chat(question, { agent_mode: true });
  await client.untilComplete();
  return { client, id: String(client.session.session_id) };
}

describe('the history API', () => {
  it('lists sessions newest first, titled by their first message', async () => {
    const first = await sessionWithOneRun('First question about 6*7');
    const second = await sessionWithOneRun('Second question');
    const empty = await TestClient.connect(server.wsUrl);
    const { status, body } = await api('/api/sessions');
    // A page that only connected, and never wrote, is not listed.
    expect(body.sessions.map((session: { id: string }) => session.id)).not.toContain(empty.session.session_id);
    await empty.close();
    expect(status).toBe(200);
    const ids = body.sessions.map((session: { id: string }) => session.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(body.sessions.find((session: { id: string }) => session.id === first.id)).toMatchObject({
      title: 'First question about 6*7',
      last_activity_at: expect.any(String),
    });
    await first.client.close();
    await second.client.close();
  });

  it('renames a chat: the title is kept, later messages do not change it, and bad titles are refused', async () => {
    const { client, id } = await sessionWithOneRun('What is 6*7?');
    const renamed = await api(`/api/sessions/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title: '  Sums for Friday  ' }),
    });
    expect(renamed).toMatchObject({ status: 200, body: { id, title: 'Sums for Friday' } });
    expect((await api(`/api/sessions/${id}`)).body.session.title).toBe('Sums for Friday');
    for (const [body, message] of [
      [{ title: '   ' }, /title must not be empty/],
      [{ title: 'x'.repeat(201) }, /at most 200/],
      [{ name: 'x' }, /title/],
    ] as const) {
      const refused = await api(`/api/sessions/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(message);
    }
    expect(
      (await api(`/api/sessions/${randomUUID()}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'x' }) }))
        .status,
    ).toBe(404);
    expect((await api('/api/sessions')).body.sessions.find((session: { id: string }) => session.id === id).title).toBe('Sums for Friday');
    await client.close();
  });

  it('returns a session’s messages and runs', async () => {
    const { client, id } = await sessionWithOneRun('What is 6*7?');
    const { status, body } = await api(`/api/sessions/${id}`);
    expect(status).toBe(200);
    expect(body.messages).toEqual([
      { role: 'user', content: 'What is 6*7?', after_seq: 0 },
      expect.objectContaining({ role: 'assistant', content: 'Compute.' }),
      expect.objectContaining({ role: 'assistant', content: '42.' }),
      expect.objectContaining({ role: 'assistant', content: 'It is 42.' }),
    ]);
    expect(body.runs).toEqual([
      expect.objectContaining({ strategy: 'roa', status: 'completed', steps: 1, max_steps: 10, completion_tokens: 14, prompt_tokens: 31 }),
    ]);
    expect(body.last_seq).toBe(client.logged.at(-1)!.seq);
    await client.close();
  });

  it('returns the event log after a seq', async () => {
    const { client, id } = await sessionWithOneRun('Log?');
    const all = await api(`/api/sessions/${id}/events`);
    expect(all.body.events).toEqual(client.logged);
    const tail = await api(`/api/sessions/${id}/events?after_seq=3`);
    expect(tail.body.events.map((event: { seq: number }) => event.seq)[0]).toBe(4);
    expect(tail.body.last_seq).toBe(client.logged.at(-1)!.seq);
    await client.close();
  });

  it('deletes a session, stopping its run', async () => {
    const client = await TestClient.connect(server.wsUrl);
    llm.enqueue({ hang: true });
    client.chat('Slow', { agent_mode: true });
    const request = await llm.waitFor(() => true);
    const id = String(client.session.session_id);
    expect((await api(`/api/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    await llm.waitForAbort(request);
    expect((await api(`/api/sessions/${id}`)).status).toBe(404);
    expect((await api(`/api/sessions/${id}`, { method: 'DELETE' })).status).toBe(404);
    await client.close();
  });

  it.each([
    ['/api/sessions/not-a-uuid', 400, 'invalid_id'],
    ['/api/sessions/00000000-0000-4000-8000-000000000000', 404, 'not_found'],
    ['/api/sessions/00000000-0000-4000-8000-000000000000/events', 404, 'not_found'],
    ['/api/sessions/not-a-uuid/events', 400, 'invalid_id'],
    ['/api/nothing-here', 404, 'not_found'],
  ])('answers %s with %d and a JSON error', async (path, status, code) => {
    const response = await api(path);
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ error: { code, message: expect.any(String) } });
  });

  it('refuses a bad after_seq', async () => {
    const { client, id } = await sessionWithOneRun('x');
    const response = await api(`/api/sessions/${id}/events?after_seq=-1`);
    expect(response).toEqual({ status: 400, body: { error: { code: 'invalid_query', message: expect.any(String) } } });
    await client.close();
  });

  it('pages the log by bytes as well as by count: a page of huge events stops at about 4 MiB, always with at least one', async () => {
    const store = await sharedTestStore();
    const id = randomUUID();
    await store.createSession(id);
    const huge = 'x'.repeat(1024 * 1024);
    for (let seq = 1; seq <= 10; seq++) await store.appendEvent(id, { type: 'assistant_message', seq, ts: new Date().toISOString(), content: huge });
    const first = await api(`/api/sessions/${id}/events`);
    expect(first.status).toBe(200);
    expect(first.body.events.map((event: { seq: number }) => event.seq)).toEqual([1, 2, 3]);
    expect(first.body).toMatchObject({ last_seq: 3, has_more: true });
    const rest: number[] = [];
    for (let after = 3, more = true; more; ) {
      const page = await api(`/api/sessions/${id}/events?after_seq=${after}`);
      rest.push(...page.body.events.map((event: { seq: number }) => event.seq));
      ({ last_seq: after, has_more: more } = page.body);
    }
    expect(rest).toEqual([4, 5, 6, 7, 8, 9, 10]);
    // A limit still applies when events are small; one event larger than the budget still comes, alone.
    expect((await api(`/api/sessions/${id}/events?limit=2`)).body).toMatchObject({ last_seq: 2, has_more: true });
  });
});
