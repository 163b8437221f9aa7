// Notifications by webhook: signed per the Standard Webhooks spec (a real receiver verifies each
// with the library), retried with the same webhook-id, and kept in the store's outbox so that a
// delivery pending when the server is killed is still made, once.
import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error: http_ece ships no types; the test uses its decrypt() only.
import ece from 'http_ece';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { askToWriteHello, writesHello } from '../helpers/approvals.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, stopAllProcesses } from '../helpers/process.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
let receiver: WebhookReceiver | undefined;
let dataDir: string | undefined;
let pushService: Server | undefined;

afterEach(async () => {
  await closeAll(
    () => client?.close(),
    () => server?.close(),
    () => stopAllProcesses({ signal: 'SIGKILL' }),
    () => llm?.close(),
    () => receiver?.close(),
    () => pushService && new Promise((resolve) => pushService!.close(resolve)),
  );
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  client = server = llm = receiver = dataDir = pushService = undefined;
});

describe('webhook notifications', () => {
  it('an approval is posted signed, retried after two 500s with the same webhook-id, and the run’s end follows', async () => {
    receiver = await WebhookReceiver.start();
    receiver.answer = (_id, attempt) => (attempt <= 2 ? 500 : 204);
    llm = await ScriptedLlmServer.start();
    server = await startStepwiseWithModel(llm.url, {
      LLM_MODEL: 'gpt-4o-mini',
      NOTIFY_WEBHOOK_URL: receiver.url,
      NOTIFY_WEBHOOK_SECRET: receiver.secret,
      NOTIFY_RETRY_BASE_MS: '10',
      PUBLIC_ORIGIN: 'https://stepwise.example.com',
    });
    client = await TestClient.connect(server.wsUrl);
    llm.enqueue(...writesHello('Written.', 'Done.'));
    const approval = await askToWriteHello(client);
    const sessionId = String(client.session.session_id);

    const third = await receiver.waitFor(
      (request, all) => request.body?.type === 'approval_required' && all.filter((other) => other.id === request.id).length === 3,
    );
    const attempts = receiver.received.filter((request) => request.id === third.id);
    expect(attempts.map((request) => [request.verified, request.status])).toEqual([
      [true, 500],
      [true, 500],
      [true, 204],
    ]);
    expect(third.body?.data).toMatchObject({
      chat: { id: sessionId },
      question: { id: approval.question_id, kind: 'approval', choices: ['Approve', 'Deny'] },
      call: { tool_call_id: 'w1', tool: 'write_file', arguments: { name: 'out.txt', content: 'hello' } },
    });
    expect(third.body?.data.link).toBe(`https://stepwise.example.com/answer/${approval.question_id}?session=${sessionId}`);

    receiver.answer = () => 204;
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve' } });
    await client.untilComplete();
    const finished = await receiver.waitFor((request) => request.body?.type === 'run_finished');
    expect(finished).toMatchObject({ verified: true, status: 204, body: { data: { chat: { id: sessionId }, reason: 'answered' } } });
    expect(new Set(receiver.received.map((request) => request.id)).size).toBe(2);
  });

  it('a person’s own webhook (multi-user mode) gets their chats’ notifications, signed with their own secret, and nobody else’s', async () => {
    receiver = await WebhookReceiver.start();
    llm = await ScriptedLlmServer.start();
    server = await startStepwiseWithModel(llm.url, {
      LLM_MODEL: 'gpt-4o-mini',
      AUTH_MODE: 'header',
      AUTH_HEADER: 'X-Forwarded-User',
      TRUSTED_PROXIES: '127.0.0.1,::1',
    });
    const as = (user: string) => ({ 'X-Forwarded-User': user, 'content-type': 'application/json' });
    const own = `${server.url}/api/notify/webhook`;
    expect((await fetch(own, { method: 'PUT', headers: as('alice'), body: JSON.stringify({ url: 'http://example.com/hooks' }) })).status).toBe(400);
    const set = await fetch(own, { method: 'PUT', headers: as('alice'), body: JSON.stringify({ url: receiver.url }) });
    const { secret } = (await set.json()) as { secret: string };
    expect(secret).toMatch(/^whsec_/);
    expect(await (await fetch(own, { headers: as('alice') })).json()).toEqual({ url: receiver.url, secret });
    expect(await (await fetch(own, { headers: as('bob') })).json()).toEqual({ url: null, secret: null });
    receiver.secret = secret;

    const script = () =>
      llm!.enqueue({ text: reasonText('Write it.') }, { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'out.txt', content: 'hello' } }] });
    const bob = await TestClient.connect(server.wsUrl, {}, { headers: as('bob') });
    script();
    bob.chat('Write hello', { agent_mode: true });
    await bob.waitFor('agent_request_input');
    await bob.close();
    client = await TestClient.connect(server.wsUrl, {}, { headers: as('alice') });
    script();
    client.chat('Write hello', { agent_mode: true });
    const approval = await client.waitFor('agent_request_input');
    const posted = await receiver.waitFor((request) => request.body?.type === 'approval_required');
    expect(posted).toMatchObject({ verified: true, body: { data: { chat: { id: client.session.session_id }, question: { id: approval.question_id } } } });
    // Bob's chat went to nobody's webhook: every request the receiver got is Alice's.
    const chats = receiver.received.map((request) => request.verified && (request.body?.data.chat as { id: string } | undefined)?.id);
    expect(new Set(chats)).toEqual(new Set([client.session.session_id]));
    expect((await fetch(own, { method: 'DELETE', headers: { 'X-Forwarded-User': 'alice' } })).status).toBe(204);
    expect(await (await fetch(own, { headers: as('alice') })).json()).toEqual({ url: null, secret: null });
  });

  it(
    'a delivery under way when the server is killed (kill -9) is made after the restart, once, with the same webhook-id',
    async () => {
      receiver = await WebhookReceiver.start();
      receiver.answer = () => 'hold';
      dataDir = mkdtempSync(join(tmpdir(), 'stepwise-webhooks-'));
      const env = { DATA_DIR: dataDir, NOTIFY_WEBHOOK_URL: receiver.url, NOTIFY_WEBHOOK_SECRET: receiver.secret, NOTIFY_RETRY_BASE_MS: '10' };
      const first = await startStepwiseProcess(env);
      const chat = await TestClient.connect(first.wsUrl);
      chat.chat('What is 15% of 240, then add 7?', { agent_mode: true });
      const pending = await receiver.waitFor((request) => request.body?.type === 'run_finished');
      chat.socket.terminate();
      await first.kill();

      receiver.answer = () => 204;
      const second = await startStepwiseProcess(env);
      const delivered = await receiver.waitFor((request) => request.id === pending.id && request.status === 204);
      expect(delivered).toMatchObject({ verified: true, body: { type: 'run_finished' } });
      // Stopped as an operator stops it: whatever it still held would have been sent by now.
      second.process.kill('SIGTERM');
      await second.exited;
      expect(receiver.received.filter((request) => request.id === pending.id).map((request) => request.status)).toEqual([0, 204]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('Web Push: a subscribed browser’s push service gets the approval encrypted for it, and a 410 forgets the subscription', async () => {
    // The push service: it keeps what it is sent, and answers as told.
    const pushed: Array<{ body: Buffer; headers: IncomingMessage['headers'] }> = [];
    let status = 201;
    let arrived: (() => void) | undefined;
    pushService = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      pushed.push({ body: Buffer.concat(chunks), headers: request.headers });
      response.writeHead(status).end();
      arrived?.();
    });
    await new Promise<void>((resolve) => pushService!.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(pushService.address() as AddressInfo).port}/push/device-1`;
    const nextPush = (count: number) =>
      new Promise<void>((resolve) => {
        arrived = () => pushed.length >= count && resolve();
        arrived();
      });

    llm = await ScriptedLlmServer.start();
    server = await startStepwiseWithModel(llm.url, { LLM_MODEL: 'gpt-4o-mini', PUSH_SERVICE_HOSTS: '127.0.0.1', NOTIFY_RETRY_BASE_MS: '10' });
    const key = (await (await fetch(`${server.url}/api/push/key`)).json()) as { public_key: string };
    expect(Buffer.from(key.public_key, 'base64url')).toHaveLength(65);
    // A browser's subscription: its own key pair and auth secret, as PushSubscription.toJSON() gives them.
    const browserKeys = createECDH('prime256v1');
    browserKeys.generateKeys();
    const auth = randomBytes(16).toString('base64url');
    const subscribe = (url: string) =>
      fetch(`${server!.url}/api/push/subscriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: url, keys: { p256dh: browserKeys.getPublicKey('base64url'), auth } }),
      });
    expect((await subscribe('https://push.attacker.example/x')).status).toBe(400);
    expect((await subscribe(endpoint)).status).toBe(201);

    client = await TestClient.connect(server.wsUrl);
    llm.enqueue(...writesHello('Written.', 'Done.'));
    const approval = await askToWriteHello(client);
    await nextPush(1);
    const [first] = pushed;
    expect(first!.headers['content-encoding']).toBe('aes128gcm');
    expect(String(first!.headers.authorization)).toMatch(/^vapid t=.+, k=/);
    const message = JSON.parse(ece.decrypt(first!.body, { version: 'aes128gcm', privateKey: browserKeys, authSecret: auth }).toString('utf8'));
    expect(message).toMatchObject({
      type: 'approval_required',
      title: expect.stringMatching(/^Approval needed/),
      body: 'The agent wants to run write_file.',
      tag: approval.question_id,
      url: expect.stringContaining(`/answer/${approval.question_id}?session=`),
    });

    // The push service says the subscription is gone: it is forgotten, and nothing more is sent to it.
    status = 410;
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve' } });
    await client.untilComplete();
    await nextPush(2);
    const forget = await fetch(`${server.url}/api/push/subscriptions`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint }),
    });
    expect(forget.status).toBe(404);
    expect(pushed).toHaveLength(2);
  });
});
