// Parked runs (INPUT_TIMEOUT_ACTION / APPROVAL_TIMEOUT_ACTION `park`, the default): a question or
// an approval nobody answers in time parks the run, which holds no run slot while it waits; the
// answer, given later (after a restart too, over a socket or REST), resumes it where it stood, no
// completed call made again; a stop ends it where it stands.
import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { computeThenAsk } from '../helpers/calculating-model.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

type Event = Record<string, unknown>;

let llm: ScriptedLlmServer | undefined;
const keep = closeAfterEach();

const PARKING = { AGENT_INPUT_TIMEOUT_MS: '200', LLM_MODEL: 'gpt-4o-mini' };

async function serve(dataDir: string, env: Record<string, string> = {}): Promise<TestServer> {
  return keep(await startStepwiseWithModel(llm!.url, { ...PARKING, DATA_DIR: dataDir, ...env }));
}

async function connect(server: TestServer, query: Record<string, string | number> = {}): Promise<TestClient> {
  return keep(await TestClient.connect(server.wsUrl, query));
}

async function runsOf(server: TestServer, sessionId: string): Promise<Array<{ status: string; end_reason: string | null }>> {
  const response = await fetch(`${server.url}/api/sessions/${sessionId}`);
  return ((await response.json()) as { runs: Array<{ status: string; end_reason: string | null }> }).runs;
}

const toolResults = (request: { body: { messages: Array<{ role: string; content?: unknown }> } }) =>
  request.body.messages.filter((message) => message.role === 'tool').map((message) => String(message.content));

describe('a run parked past its question’s deadline', () => {
  it('holds no run slot while it waits; the answer resumes it where it stood, no completed call made again', async () => {
    llm = keep(await ScriptedLlmServer.start());
    const server = await serve(mkdtempSync(join(tmpdir(), 'stepwise-park-')), { MAX_CONCURRENT_RUNS: '1' });
    llm.enqueue(...computeThenAsk());
    const client = await connect(server);
    const sessionId = String(client.session.session_id);
    client.chat('Compute and ask me', { agent_mode: true });
    const question = await client.waitFor('agent_request_input');
    const parked = await client.waitFor('agent_parked', { timeoutMs: 10_000 });
    expect(parked).toMatchObject({ question_id: question.question_id, step: 1 });
    expect(client.events.some((event) => event.type === 'response_complete' || event.update_type === 'agent_request_input_timeout')).toBe(false);
    expect(await runsOf(server, sessionId)).toMatchObject([{ status: 'parked' }]);

    // MAX_CONCURRENT_RUNS=1: the parked run holds no slot, so another chat's answer runs meanwhile.
    llm.enqueue({ text: 'Meanwhile, hello.' });
    const other = await connect(server);
    other.chat('Hello');
    expect(summarize(await other.untilComplete())).toContain('assistant_message');
    // Its own chat takes no new message while it waits.
    client.chat('Something else');
    expect(await client.waitFor('error')).toMatchObject({ code: 'run_active' });

    const requestsBefore = llm.requests.length;
    llm.enqueue({ text: observeText('Blue it is.', { final_answer: '42, in blue.' }) });
    const from = client.events.length;
    client.send({ type: 'agent_user_input', question_id: question.question_id, content: 'blue' });
    const events = (await client.untilComplete({ from, timeoutMs: 15_000 })) as Event[];
    expect(summarize(events)).toEqual([
      'tool_complete:request_input',
      'agent_observe:1',
      'assistant_message',
      'agent_completion:answered',
      'response_complete',
    ]);
    // One model call after the answer (observe): reason and act were not made again, nor the calculator.
    expect(llm.requests.slice(requestsBefore).map((request) => request.phase)).toEqual(['observe']);
    expect(toolResults(llm.requests.at(-1)!)).toEqual(['42', 'blue']);
    expect(client.logged.filter((event) => event.type === 'tool_complete' && event.tool_name === 'calculator')).toHaveLength(1);
    expect(await runsOf(server, sessionId)).toMatchObject([{ status: 'completed' }]);
  });

  it('an approval parks the run too: after a restart it is still parked, and the answer given over REST resumes it, the call made once', async () => {
    llm = keep(await ScriptedLlmServer.start());
    const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-park-'));
    const first = await serve(dataDir);
    llm.enqueue(
      { text: reasonText('Write it.') },
      { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'later.txt', content: 'approved later' } }] },
    );
    const client = await connect(first);
    const sessionId = String(client.session.session_id);
    client.chat('Write later.txt', { agent_mode: true });
    const approval = await client.waitFor('agent_request_input');
    expect(await client.waitFor('agent_parked', { timeoutMs: 10_000 })).toMatchObject({ question_id: approval.question_id });
    await client.close();
    await first.close();

    const second = await serve(dataDir);
    // Startup recovery left it parked: nothing asked the model anything.
    expect(await runsOf(second, sessionId)).toMatchObject([{ status: 'parked' }]);
    expect(llm.requests.map((request) => request.phase)).toEqual(['reason', 'act']);
    const questions = `${second.url}/api/sessions/${sessionId}/questions`;
    const open = await fetch(`${questions}/${approval.question_id}`);
    expect(open.status).toBe(200);
    expect(await open.json()).toMatchObject({ question: { kind: 'approval', tool: 'write_file', question_id: approval.question_id } });
    expect((await fetch(`${questions}/q_nothing`)).status).toBe(404);

    const watcher = await connect(second, { session_id: sessionId, after_seq: 0 });
    llm.enqueue({ text: observeText('Written.', { final_answer: 'I wrote later.txt.' }) });
    const approve = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ approval: { decision: 'approve' } }) };
    const answered = await fetch(`${questions}/${approval.question_id}/answer`, approve);
    expect(answered.status).toBe(200);
    const events = (await watcher.untilComplete({ timeoutMs: 15_000 })) as Event[];
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    expect(events.filter((event) => event.type === 'tool_complete' && event.tool_name === 'write_file')).toHaveLength(1);
    expect(await readFile(join(dataDir, 'files', sessionId, 'later.txt'), 'utf8')).toBe('approved later');
    expect(llm.requests.map((request) => request.phase)).toEqual(['reason', 'act', 'observe']);
    // Answered: the question is open no more.
    expect((await fetch(`${questions}/${approval.question_id}`)).status).toBe(404);
    expect((await fetch(`${questions}/${approval.question_id}/answer`, approve)).status).toBe(404);
  });

  it('a stop ends a parked run where it stands, with its stop receipt', async () => {
    llm = keep(await ScriptedLlmServer.start());
    const server = await serve(mkdtempSync(join(tmpdir(), 'stepwise-park-')));
    llm.enqueue({ text: reasonText('Write it.') }, { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'never.txt', content: 'x' } }] });
    const client = await connect(server);
    client.chat('Write never.txt', { agent_mode: true });
    await client.waitFor('agent_parked', { timeoutMs: 10_000 });
    client.send({ type: 'agent_control', action: 'stop' });
    const events = (await client.untilComplete()) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    expect(events.find((event) => event.update_type === 'agent_stopped')).toMatchObject({
      step: 1,
      calls: [{ tool_call_id: 'w1', tool: 'write_file', status: 'not_started' }],
    });
    expect(await runsOf(server, String(client.session.session_id))).toMatchObject([{ status: 'stopped', end_reason: 'user' }]);
    expect(llm.requests).toHaveLength(2);
  });
});
