import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Store, TOKENS } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { observeText, type RecordedRequest, reasonText, ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { closeAfterEach } from '../helpers/per-test.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let primary: ScriptedLlmServer | undefined;
let backup: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const open = closeAfterEach();

const USAGE = { prompt_tokens: 1_000_000, completion_tokens: 0 };

/** The backup model's answers by phase; its observation finishes when `finish` says so. */
function backupReplies(finish: () => boolean) {
  return (request: RecordedRequest) =>
    request.phase === 'reason'
      ? { text: reasonText('Think it over.', { finish: true }), usage: USAGE }
      : { text: observeText('Looked at it.', finish() ? { final_answer: 'Answered by the backup.' } : { should_continue: true }), usage: USAGE };
}

/**
 * Stepwise whose every purpose goes to gpt-4o-mini on an endpoint that answers 500 (or, with
 * `refused`, on an address nothing listens on), then to llama3.1 on a healthy one.
 */
async function start(options: { refused?: string; primaryReply?: ScriptedReply; env?: Record<string, string> } = {}) {
  primary = (await ScriptedLlmServer.start()).respond(() => options.primaryReply ?? { status: 500, errorMessage: 'the primary is down' });
  backup = open(await ScriptedLlmServer.start());
  const path = join(mkdtempSync(join(tmpdir(), 'stepwise-fallback-')), 'stepwise.config.json');
  writeFileSync(
    path,
    JSON.stringify({
      endpoints: { backup: { base_url: backup.url }, ...(options.refused ? { down: { base_url: options.refused } } : {}) },
      models: { '*': [options.refused ? 'down:gpt-4o-mini' : 'gpt-4o-mini', 'backup:llama3.1'] },
      prices: { 'llama3.1': { input: 0.5, output: 1 } },
    }),
  );
  server = open(await startStepwiseWithModel(primary.url, { STEPWISE_CONFIG: path, LLM_MAX_RETRIES: '1', ...options.env }));
  client = open(await TestClient.connect(server.wsUrl));
}

async function metric(name: string, labels: string): Promise<number | undefined> {
  const body = await (await fetch(`${server!.url}/metrics`)).text();
  const line = body.split('\n').find((each) => each.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('a fallback model', () => {
  it('answers when the first endpoint fails with 500: the run completes on the second, and its events, cost and metrics name it', async () => {
    await start();
    backup!.respond(backupReplies(() => true));
    client!.chat('Hello', { agent_mode: true });
    const events = await client!.untilComplete();
    const updates = (type: string) => events.filter((event) => event.type === 'agent_update' && event.update_type === type);

    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('Answered by the backup.');
    expect(updates('agent_completion')[0]).toMatchObject({ reason: 'answered', cost_usd: 1 });
    // Each call went to the primary (once, and once more by the SDK's retry), then to the backup.
    expect(primary!.requests.map((request) => request.purpose)).toEqual(['roa.reason', 'roa.reason', 'roa.observe', 'roa.observe']);
    expect(backup!.requests.map((request) => [request.purpose, request.body.model])).toEqual([
      ['roa.reason', 'llama3.1'],
      ['roa.observe', 'llama3.1'],
    ]);
    expect(updates('agent_model_fallback')).toEqual([
      expect.objectContaining({
        purpose: 'roa.reason',
        model: 'llama3.1',
        from_model: 'gpt-4o-mini',
        step: 1,
        failures: [{ model: 'gpt-4o-mini', reason: expect.stringContaining('500') }],
      }),
      expect.objectContaining({ purpose: 'roa.observe', model: 'llama3.1', from_model: 'gpt-4o-mini', step: 1 }),
    ]);
    expect(updates('agent_usage').map((usage) => [usage.model, usage.cost_usd])).toEqual([
      ['llama3.1', 0.5],
      ['llama3.1', 0.5],
    ]);
    const runId = String(updates('agent_start')[0]?.run_id);
    const journal = await server!.container.resolve<Store>(TOKENS.Store).readJournal(runId);
    expect(journal.filter((entry) => entry.kind === 'model').map((entry) => [entry.key, (entry.value as { model?: string }).model])).toEqual([
      ['roa.reason', 'llama3.1'],
      ['roa.observe', 'llama3.1'],
    ]);
    expect(await metric('stepwise_model_answers_total', 'model="llama3.1"')).toBe(2);
    expect(await metric('stepwise_model_answers_total', 'model="gpt-4o-mini"')).toBeUndefined();
    expect(await metric('stepwise_model_fallbacks_total', 'from="gpt-4o-mini",to="llama3.1"')).toBe(2);
  });

  it('is journaled like any call: a continued run does not call again for the steps it replays', async () => {
    await start();
    let finish = false;
    backup!.respond(backupReplies(() => finish));
    client!.chat('Hello', { agent_mode: true, agent_max_steps: 1 });
    const first = await client!.untilComplete();
    expect(first.find((event) => event.type === 'agent_update' && event.update_type === 'agent_completion')).toMatchObject({ reason: 'max_steps' });
    const callsBefore = backup!.requests.length;
    const firstRun = first.find((event) => event.type === 'agent_update' && event.update_type === 'agent_start')?.run_id;

    finish = true;
    const from = client!.events.length;
    client!.send({ type: 'agent_control', action: 'resume', extra_steps: 1 });
    const second = await client!.untilComplete({ from });
    expect(second.find((event) => event.type === 'agent_update' && event.update_type === 'agent_start')).toMatchObject({ resumed_from: firstRun });
    expect(second.find((event) => event.type === 'assistant_message')?.content).toBe('Answered by the backup.');
    // Step 1 came from the journal; only step 2's reason and observation were asked, of the backup again.
    expect(backup!.requests.slice(callsBefore).map((request) => request.purpose)).toEqual(['roa.reason', 'roa.observe']);
    const fallbacks = second.filter((event) => event.type === 'agent_update' && event.update_type === 'agent_model_fallback');
    expect(fallbacks.map((event) => event.step)).toEqual([2, 2]);
  });

  it('answers when the first endpoint refuses the connection, and the settings list the route with its fallback', async () => {
    const closed = await ScriptedLlmServer.start();
    const address = closed.url;
    await closed.close();
    await start({ refused: address });
    const settings = client!.session.settings as { name: string; value: string }[];
    expect(settings.find((setting) => setting.name === 'models.*')?.value).toBe('down:gpt-4o-mini, then backup:llama3.1');
    backup!.respond(backupReplies(() => true));
    client!.chat('Hello', { agent_mode: true });
    const events = await client!.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('Answered by the backup.');
    const fallback = events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_model_fallback');
    expect(String(((fallback?.failures ?? []) as { reason: string }[])[0]?.reason)).toContain('connection refused');
  });

  it.each([
    ['answers 429 after the retries', { status: 429, errorMessage: 'slow down' }, {}, '429'],
    ['does not answer in time', { hang: true }, { LLM_TIMEOUT_MS: '300', LLM_MAX_RETRIES: '0' }, 'did not answer in time'],
  ] as const)('answers when the first model %s', async (_case, primaryReply, env, reason) => {
    await start({ primaryReply, env });
    backup!.respond(backupReplies(() => true));
    client!.chat('Hello', { agent_mode: true });
    const events = await client!.untilComplete();
    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('Answered by the backup.');
    const fallback = events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_model_fallback');
    expect(String(((fallback?.failures ?? []) as { reason: string }[])[0]?.reason)).toContain(reason);
  });

  it('does not move on when the request itself is refused (400): any model would refuse it', async () => {
    await start({ primaryReply: { status: 400, errorMessage: 'bad request' } });
    client!.chat('Hello', { agent_mode: true });
    const events = await client!.untilComplete();
    expect(events.find((event) => event.type === 'agent_update' && event.update_type === 'agent_error')?.message).toContain('400');
    expect(backup!.requests).toEqual([]);
  });
});
