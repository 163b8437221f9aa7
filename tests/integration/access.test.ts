import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';

const TOKEN = 'test-token-0123456789abcdef';
let server: TestServer;

afterEach(async () => {
  await server?.close();
});

/** Tries an upgrade; resolves with the HTTP status of a refusal, or 101 and the chosen subprotocol. */
function upgrade(options: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<{ status: number; protocol?: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(server.wsUrl, options.protocols, { headers: options.headers });
    socket.on('unexpected-response', (_request, response) => {
      resolve({ status: response.statusCode ?? 0 });
      socket.terminate();
    });
    socket.on('open', () => {
      resolve({ status: 101, protocol: socket.protocol });
      socket.close();
    });
    socket.on('error', (error) => {
      if (!/Unexpected server response/.test(error.message)) reject(error);
    });
  });
}

describe('with AUTH_TOKEN set', () => {
  it('needs the bearer token on REST calls, but not on the health check', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN });
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
    const refused = await fetch(`${server.url}/api/sessions`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    expect((await fetch(`${server.url}/api/sessions`, { headers: { authorization: 'Bearer wrong-token' } })).status).toBe(401);
    expect((await fetch(`${server.url}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('guards AG-UI runs and the stop route like every /api route', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN, LLM_PROVIDER: 'demo' });
    const input = JSON.stringify({ threadId: randomUUID(), runId: 'r', messages: [{ id: '1', role: 'user', content: 'What is 2+2?' }] });
    const post = (headers: Record<string, string>) =>
      fetch(`${server!.url}/api/ag-ui`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: input });
    const refused = await post({});
    expect(refused.status).toBe(401);
    expect((await refused.json()).error.code).toBe('unauthorized');
    expect((await fetch(`${server.url}/api/sessions/${randomUUID()}/stop`, { method: 'POST' })).status).toBe(401);
    const allowed = await post({ authorization: `Bearer ${TOKEN}` });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('RUN_FINISHED');
  });

  it('refuses socket upgrades without the token with 401', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN });
    expect(await upgrade()).toEqual({ status: 401 });
    expect(await upgrade({ headers: { authorization: 'Bearer nope' } })).toEqual({ status: 401 });
    expect(await upgrade({ protocols: ['stepwise', 'bearer.nope'] })).toEqual({ status: 401 });
  });

  it('accepts the token as a header (scripts) or as the subprotocol offer (browsers), answering "stepwise"', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN });
    expect((await upgrade({ headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(101);
    expect(await upgrade({ protocols: ['stepwise', `bearer.${TOKEN}`] })).toEqual({ status: 101, protocol: 'stepwise' });
  });

  it('serves the web app page without a token, so it can ask for one', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN });
    expect((await fetch(`${server.url}/`)).status).toBe(200);
  });

  it('refuses to start with a token too short to be safe', async () => {
    await expect(startStepwise({ AUTH_TOKEN: 'short' })).rejects.toThrow(/Invalid AUTH_TOKEN: must be at least 16 characters/);
  });
});

describe('origins', () => {
  it('accept only the listed browser origins, with 403 for others; scripts without Origin pass', async () => {
    server = await startStepwise({ ALLOWED_ORIGINS: 'https://chat.example.com' });
    expect((await upgrade({ headers: { origin: 'https://chat.example.com' } })).status).toBe(101);
    expect(await upgrade({ headers: { origin: 'https://evil.example.com' } })).toEqual({ status: 403 });
    expect(await upgrade({ headers: { origin: 'http://localhost:5173' } })).toEqual({ status: 403 });
    expect((await upgrade()).status).toBe(101);
  });

  it('default to the server’s own origin and localhost', async () => {
    server = await startStepwise();
    const own = new URL(server.url).origin;
    expect((await upgrade({ headers: { origin: own } })).status).toBe(101);
    expect((await upgrade({ headers: { origin: 'http://localhost:5173' } })).status).toBe(101);
    expect(await upgrade({ headers: { origin: 'https://evil.example.com' } })).toEqual({ status: 403 });
    expect(await upgrade({ headers: { origin: 'null' } })).toEqual({ status: 403 });
  });

  it('check the origin before the token', async () => {
    server = await startStepwise({ AUTH_TOKEN: TOKEN });
    expect(await upgrade({ headers: { origin: 'https://evil.example.com', authorization: `Bearer ${TOKEN}` } })).toEqual({ status: 403 });
  });
});
