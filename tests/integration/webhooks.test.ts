// Notifications by webhook: signed per the Standard Webhooks spec (a real receiver verifies each
// with the library), retried with the same webhook-id, and kept in the store's outbox so that a
// delivery pending when the server is killed is still made, once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { WebhookReceiver } from '../fixtures/webhook-receiver.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, stopAllProcesses } from '../helpers/process.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
let receiver: WebhookReceiver | undefined;
let dataDir: string | undefined;

afterEach(async () => {
  await closeAll(
    () => client?.close(),
    () => server?.close(),
    () => stopAllProcesses({ signal: 'SIGKILL' }),
    () => llm?.close(),
    () => receiver?.close(),
  );
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  client = server = llm = receiver = dataDir = undefined;
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
    llm.enqueue(
      { text: reasonText('Write it.') },
      { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'out.txt', content: 'hello' } }] },
      { text: observeText('Written.', { final_answer: 'Done.' }) },
    );
    client.chat('Write hello to out.txt', { agent_mode: true });
    const approval = await client.waitFor('agent_request_input');
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
});
