import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;
const clients: TestClient[] = [];

async function start(env: Record<string, string>) {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, env);
}

async function connect(options: { localAddress?: string } = {}): Promise<TestClient> {
  const client = await TestClient.connect(server.wsUrl, {}, options);
  clients.push(client);
  return client;
}

async function retryUntilAccepted(open: () => Promise<TestClient>): Promise<TestClient> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open();
    } catch (error) {
      if (attempt >= 100 || !/429/.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await server?.close();
  await llm?.close();
});

describe('limits', () => {
  it('refuses a flood of messages from one socket with rate_limited, and the socket recovers', async () => {
    await start({ MAX_MESSAGES_PER_SECOND: '5' });
    const client = await connect();
    for (let index = 0; index < 40; index++) client.send({ type: 'agent_control', action: 'stop' });
    // Every one of the 40 messages gets an answer: refused as a flood, or as having no run to stop.
    await client.next(() => client.events.filter((event) => event.type === 'error').length >= 40, { timeoutMs: 30_000 });
    const codes = client.events.filter((event) => event.type === 'error').map((event) => event.code);
    expect(codes.filter((code) => code === 'no_active_run').length).toBeLessThanOrEqual(6);
    expect(codes.filter((code) => code === 'rate_limited').length).toBeGreaterThanOrEqual(34);

    // The bucket refills with time: a second is enough for five messages, however busy the machine.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const from = client.events.length;
    llm.enqueue({ text: 'Calm again.' });
    client.chat('Hello');
    expect(summarize(await client.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
  });

  it('refuses sockets beyond the limit per address with 429, and takes new ones once some close', async () => {
    await start({ MAX_SOCKETS_PER_ADDRESS: '3' });
    const open = [await connect(), await connect(), await connect()];
    const status = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(server.wsUrl);
      socket.on('unexpected-response', (_request, response) => {
        resolve(response.statusCode ?? 0);
        socket.terminate();
      });
      socket.on('open', () => reject(new Error('the fourth socket was accepted')));
      socket.on('error', () => undefined);
    });
    expect(status).toBe(429);
    await open[0]!.close();
    // The server counts the socket out when it sees the close; until then a new one may still be refused.
    const again = await retryUntilAccepted(connect);
    expect(again.session.type).toBe('session');
  });

  it('answers server_busy beyond the concurrent run limit, then serves again', async () => {
    await start({ MAX_CONCURRENT_RUNS: '1' });
    const [first, second] = [await connect(), await connect()];
    llm.enqueue({ hang: true });
    first.chat('Occupy the server', { agent_mode: true });
    await llm.waitFor(() => true);
    second.chat('Me too', { agent_mode: true });
    expect(await second.waitFor('error')).toMatchObject({ code: 'server_busy' });
    first.send({ type: 'agent_control', action: 'stop' });
    await first.untilComplete();
    llm.enqueue({ text: 'Your turn.' });
    const from = second.events.length;
    second.chat('Now?');
    expect(summarize(await second.untilComplete({ from }))).toEqual(['assistant_message', 'response_complete']);
  });

  it('gives one client address only its share of the run slots, leaving the rest to others', async () => {
    await start({ MAX_CONCURRENT_RUNS: '4', MAX_RUNS_PER_ADDRESS: '2' });
    llm.respond(() => ({ hang: true }));
    const greedy = [await connect(), await connect(), await connect()];
    for (const client of greedy.slice(0, 2)) client.chat('Hold a slot', { agent_mode: true });
    await llm.waitFor(() => llm.requests.length >= 2);
    greedy[2]!.chat('And another', { agent_mode: true });
    expect(await greedy[2]!.waitFor('error')).toMatchObject({ code: 'too_many_runs' });
    // Another address (any 127.x address reaches a loopback server) still gets a slot.
    const other = await connect({ localAddress: '127.0.0.2' });
    other.chat('My turn', { agent_mode: true });
    await llm.waitFor(() => llm.requests.length >= 3);
    expect(other.events.filter((event) => event.type === 'error')).toEqual([]);
    // Once one of its runs ends, the first address may start another.
    greedy[0]!.send({ type: 'agent_control', action: 'stop' });
    await greedy[0]!.untilComplete();
    greedy[2]!.chat('Now?', { agent_mode: true });
    await llm.waitFor(() => llm.requests.length >= 4);
    expect(greedy[2]!.events.filter((event) => event.type === 'error')).toHaveLength(1);
    for (const client of [greedy[1]!, greedy[2]!, other]) client.send({ type: 'agent_control', action: 'stop' });
    await Promise.all([greedy[1]!, greedy[2]!, other].map((client) => client.untilComplete()));
  });

  it('stops a run that outlives its wall-clock budget, cancelling the model request', async () => {
    await start({ AGENT_RUN_TIMEOUT_MS: '300' });
    const client = await connect();
    llm.enqueue({ hang: true });
    client.chat('Take forever', { agent_mode: true });
    const request = await llm.waitFor(() => true);
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:timeout', 'response_complete']);
    await llm.waitForAbort(request);
  });

  it('stops a plain chat answer that outlives CHAT_TIMEOUT_MS, saying so and cancelling the model request', async () => {
    await start({ CHAT_TIMEOUT_MS: '300' });
    const client = await connect();
    llm.enqueue({ hang: true });
    client.chat('Take forever');
    const request = await llm.waitFor(() => true);
    const events = await client.untilComplete({ timeoutMs: 30_000 });
    expect(summarize(events)).toEqual(['error:timeout', 'response_complete']);
    await llm.waitForAbort(request);
  });

  it('stops a run that spends more tokens than its budget', async () => {
    await start({ AGENT_RUN_TOKEN_BUDGET: '100' });
    const client = await connect();
    llm.respond((request) => ({
      text: request.phase === 'observe' ? observeText('More.') : reasonText('Go on.'),
      usage: { prompt_tokens: 40, completion_tokens: 10 },
    }));
    client.chat('Spend', { agent_mode: true, agent_max_steps: 10 });
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:token_budget', 'response_complete']);
    expect(llm.requests).toHaveLength(3);
  });

  it('sends the model only as much history as the context budget allows, oldest turns first', async () => {
    await start({ CONTEXT_BUDGET_CHARS: '1000' });
    const client = await connect();
    for (const word of ['alpha', 'bravo', 'charlie']) {
      llm.enqueue({ text: `${word} `.repeat(60) });
      const from = client.events.length;
      client.chat(`Tell me about ${word}`);
      await client.untilComplete({ from });
    }
    llm.enqueue({ text: 'ok' });
    const from = client.events.length;
    client.chat('And now?');
    await client.untilComplete({ from });
    const sent = llm.requests.at(-1)!.body.messages.map((message) => message.content ?? '');
    expect(sent.at(-1)).toBe('And now?');
    expect(sent.some((content) => content.includes('alpha'))).toBe(false);
    expect(sent.some((content) => content.includes('charlie'))).toBe(true);
    expect(sent.slice(1).join('').length).toBeLessThanOrEqual(1000 + 'And now?'.length);
  });

  it('times out a model call that never answers, retries it, and reports the failure', async () => {
    await start({ LLM_TIMEOUT_MS: '200', LLM_MAX_RETRIES: '1' });
    const client = await connect();
    llm.enqueue({ hang: true }, { hang: true });
    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    expect(summarize(events)).toEqual(['agent_start', 'agent_turn_start:1', 'agent_error:1', 'response_complete']);
    expect(String(events.find((event) => event.update_type === 'agent_error')!.message)).toMatch(/did not answer in time \(LLM_TIMEOUT_MS\)/);
    expect(llm.requests).toHaveLength(2);
    await llm.waitForAbort(llm.requests[1]!);
  });
});
