import { MemoryStore } from '@stepwise/backend';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let server: TestServer;
const clients: TestClient[] = [];

async function connect(query: Record<string, string | number> = {}): Promise<TestClient> {
  const client = await TestClient.connect(server.wsUrl, query);
  clients.push(client);
  return client;
}

let llm: ScriptedLlmServer | undefined;

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await server?.close();
  await llm?.close();
  llm = undefined;
});

describe('sessions nobody wrote in', () => {
  it('leave no stored session behind, however many connections come and go', async () => {
    const store = new MemoryStore();
    server = await startStepwise({}, undefined, store);
    for (let cycle = 0; cycle < 100; cycle++) {
      const client = await TestClient.connect(server.wsUrl);
      await client.close();
    }
    expect(await store.listSessions(1_000)).toEqual([]);
  });

  it('are stored at the first message, and a socket that rejoins before it finds the same session', async () => {
    const store = new MemoryStore();
    server = await startStepwise({}, undefined, store);
    const first = await connect();
    const id = first.session.session_id;
    const again = await connect({ session_id: id, after_seq: 0 });
    expect(again.session).toMatchObject({ session_id: id, resumed: true });
    first.chat('What is 2+2?');
    await first.untilComplete();
    expect((await store.listSessions(10)).map((session) => session.id)).toEqual([id]);
    expect(summarize(await again.untilComplete())).toEqual(['assistant_message', 'response_complete']);
  });

  it('take a file attached before the first message, and are stored then', async () => {
    const store = new MemoryStore();
    server = await startStepwise({}, undefined, store);
    const client = await connect();
    const id = client.session.session_id;
    expect((await fetch(`${server.url}/api/sessions/${id}/files`)).status).toBe(200);
    expect(await store.getSession(id)).toBeUndefined();
    const upload = await fetch(`${server.url}/api/sessions/${id}/files?name=notes.txt`, { method: 'POST', body: 'Some notes.' });
    expect(upload.status).toBe(201);
    expect(await store.getSession(id)).toMatchObject({ id });
    expect(await client.waitFor('file_saved')).toMatchObject({ file: { name: 'notes.txt' }, seq: 1 });
  });
});

describe('deleting a session while sockets are attached', () => {
  it('stops its run, tells every attached socket and closes them; a rejoin starts a new session that works', async () => {
    llm = await ScriptedLlmServer.start();
    server = await startStepwiseWithModel(llm.url);
    const first = await connect();
    const id = first.session.session_id;
    const second = await connect({ session_id: id, after_seq: 0 });
    llm.enqueue({ hang: true });
    first.chat('Work on it', { agent_mode: true });
    const request = await llm.waitFor(() => true);

    expect((await fetch(`${server.url}/api/sessions/${id}`, { method: 'DELETE' })).status).toBe(204);
    for (const client of [first, second]) {
      expect(await client.closed()).toBe(4404);
      expect(summarize(client.events).slice(-3)).toEqual(['agent_stopped:user', 'response_complete', 'session_deleted']);
    }
    await llm.waitForAbort(request);
    expect((await fetch(`${server.url}/api/sessions/${id}`)).status).toBe(404);

    const again = await connect({ session_id: id, after_seq: 5 });
    expect(again.session.resumed).toBe(false);
    expect(again.session.session_id).not.toBe(id);
    llm.enqueue({ text: 'Still here.' });
    again.chat('Hello?');
    expect(summarize(await again.untilComplete())).toEqual(['assistant_message', 'response_complete']);
  });
});
