import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

let server: TestServer | undefined;
let client: TestClient | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await client?.close();
  await server?.close();
  for (const close of closers.splice(0)) await close();
  client = server = undefined;
});

/** An address nothing listens on: a server that was started and closed. */
async function deadEndpoint(): Promise<string> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

/** An endpoint that refuses every key with 401. */
async function refusingEndpoint(): Promise<string> {
  const refusing: Server = createServer((_request, response) => {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"Incorrect API key provided: sk-***"}}');
  }).listen(0, '127.0.0.1');
  await once(refusing, 'listening');
  closers.push(() => new Promise<void>((resolve) => refusing.close(() => resolve())));
  return `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1`;
}

/** The model's health as the client knows it: the session's, then every live update. */
function latestHealth(client: TestClient): Record<string, unknown> | undefined {
  const updates = client.events.filter((event) => event.type === 'model_health').map((event) => event.health as Record<string, unknown>);
  return updates.at(-1) ?? (client.session.model_health as Record<string, unknown> | undefined);
}

async function healthBecomes(client: TestClient, status: string): Promise<Record<string, unknown>> {
  await client.next(() => latestHealth(client)?.status === status);
  return latestHealth(client)!;
}

describe('the model’s health', () => {
  it('says an unreachable endpoint is failing, why, and what to check; a run’s error says the same', async () => {
    const url = await deadEndpoint();
    server = await startStepwiseWithModel(url, { LLM_MAX_RETRIES: '0' });
    client = await TestClient.connect(server.wsUrl);
    expect(client.session.model_endpoint).toBe(url);
    const health = await healthBecomes(client, 'failing');
    expect(health.message).toMatch(/connection refused/);
    expect(health.hint).toMatch(/OPENAI_BASE_URL/);

    client.chat('Hello', { agent_mode: true });
    const events = await client.untilComplete();
    const failure = events.find((event) => event.update_type === 'agent_error')!;
    expect(String(failure.message)).toMatch(/Could not reach the model endpoint at .* \(connection refused\): check OPENAI_BASE_URL/);
  });

  it('says the key was refused when the endpoint answers 401, without the endpoint’s own words', async () => {
    const url = await refusingEndpoint();
    server = await startStepwiseWithModel(url, { LLM_MAX_RETRIES: '0' });
    client = await TestClient.connect(server.wsUrl);
    const health = await healthBecomes(client, 'failing');
    expect(health).toMatchObject({ message: 'The endpoint refused the key (401)', hint: 'Check OPENAI_API_KEY' });

    client.chat('Hello');
    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'error')!;
    expect(failure.message).toBe('The model endpoint answered 401: the key was refused; check OPENAI_API_KEY');
    expect(JSON.stringify(client.events)).not.toContain('Incorrect API key');
  });

  it('goes live from failing to ok once a call succeeds, on every open socket', async () => {
    const llm = await ScriptedLlmServer.start();
    closers.push(() => llm.close());
    server = await startStepwiseWithModel(llm.url, { LLM_MAX_RETRIES: '0' });
    client = await TestClient.connect(server.wsUrl);
    const watcher = await TestClient.connect(server.wsUrl);
    closers.push(() => watcher.close());
    llm.enqueue({ status: 500 });
    client.chat('Hello');
    await client.untilComplete();
    expect(await healthBecomes(watcher, 'failing')).toMatchObject({ hint: 'Check the model server’s logs' });
    llm.enqueue({ text: 'Hi!' });
    const from = client.events.length;
    client.chat('Hello again');
    await client.untilComplete({ from });
    expect((await healthBecomes(watcher, 'ok')).status).toBe('ok');
  });

  it('lists the settings in force without secrets, and where MCP servers are configured', async () => {
    const llm = await ScriptedLlmServer.start();
    closers.push(() => llm.close());
    server = await startStepwiseWithModel(llm.url, { AUTH_TOKEN: 'a-very-secret-token-1234' });
    client = await TestClient.connect(server.wsUrl, {}, { headers: { authorization: 'Bearer a-very-secret-token-1234' } });
    const settings = client.session.settings as { name: string; value: string }[];
    expect(settings.find((setting) => setting.name === 'MAX_CONCURRENT_RUNS')).toMatchObject({ value: expect.stringMatching(/^\d+$/) });
    expect(settings.find((setting) => setting.name === 'AUTH_TOKEN')).toMatchObject({ value: 'set' });
    expect(settings.find((setting) => setting.name === 'OPENAI_API_KEY')).toMatchObject({ value: 'set' });
    expect(JSON.stringify(client.session)).not.toContain('a-very-secret-token-1234');
    expect(JSON.stringify(client.session)).not.toContain('test-key');
    expect(client.session.config_file).toEqual(expect.any(String));
  });
});
