import { mkdtempSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configFromEnv, type CompletionRequest, type Logger, ModelError, ModelHealthMonitor, OpenAiLlmClient } from '@stepwise/backend';
import { createProxy } from 'proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';

interface Line {
  level: string;
  object: Record<string, unknown>;
  message?: string;
}

let llm: ScriptedLlmServer;
beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
});
afterAll(async () => {
  await llm.close();
});

/** A logger that keeps its lines. */
function recordingLogger(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger: Logger = {
    debug: (object, message) => lines.push({ level: 'debug', object: object as Record<string, unknown>, message }),
    info: (object, message) => lines.push({ level: 'info', object: object as Record<string, unknown>, message }),
    warn: (object, message) => lines.push({ level: 'warn', object: object as Record<string, unknown>, message }),
    error: (object, message) => lines.push({ level: 'error', object: object as Record<string, unknown>, message }),
    child: () => logger,
  };
  return { logger, lines };
}

/** The openai adapter for the scripted server, with these settings on top. */
function modelClient(env: Record<string, string> = {}): { model: OpenAiLlmClient; lines: Line[] } {
  const { logger, lines } = recordingLogger();
  const config = configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', LLM_RETRY_BASE_MS: '1', ...env });
  return { model: new OpenAiLlmClient(config, logger), lines };
}

function call(purpose = 'chat', extra: Partial<CompletionRequest> = {}): CompletionRequest {
  return { purpose, messages: [{ role: 'user', content: 'Hello' }], signal: new AbortController().signal, ...extra };
}

/** A config file in a fresh folder, named by STEPWISE_CONFIG. */
function configFile(content: object): Record<string, string> {
  const path = join(mkdtempSync(join(tmpdir(), 'stepwise-wire-')), 'stepwise.config.json');
  writeFileSync(path, JSON.stringify(content));
  return { STEPWISE_CONFIG: path };
}

describe('the model wire on the openai SDK', () => {
  it('sends each message as it is at the time of the call, also one sent before and changed since', async () => {
    const { model } = modelClient();
    const history = [
      { role: 'user' as const, content: 'First question' },
      { role: 'assistant' as const, content: 'First answer' },
    ];
    const before = llm.requests.length;
    await model.complete(call('chat', { messages: history }));
    history[1]!.content = 'First answer, corrected';
    const toolTurn = { role: 'assistant' as const, content: '', toolCalls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"1+1"}' }] };
    await model.complete(
      call('chat', { messages: [...history, toolTurn, { role: 'tool', toolCallId: 'c1', content: '2' }, { role: 'user', content: 'Next' }] }),
    );
    const [first, second] = llm.requests.slice(before).map((request) => request.body.messages);
    expect(first).toEqual([
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'First answer' },
    ]);
    expect(second).toEqual([
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'First answer, corrected' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"1+1"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '2' },
      { role: 'user', content: 'Next' },
    ]);
  });

  it("sends each of two long chats' calls with its own messages, after replies that came whole, failed or broke off", async () => {
    const { model } = modelClient({ LLM_MAX_RETRIES: '2' });
    // Two chats of about 150 KiB each: their bodies go through the client's kept buffers.
    const chat = (name: string) =>
      Array.from({ length: 150 }, (_, n) => ({ role: n % 2 ? ('assistant' as const) : ('user' as const), content: `${name} ${n} ${'x'.repeat(1_000)}` }));
    const chats = { one: chat('one'), two: chat('two') };
    const sent: { name: 'one' | 'two'; messages: unknown[] }[] = [];
    const replies = [{ text: 'Fine.' }, { status: 500 }, { text: 'Fine.' }, { text: 'Half', breakAfterChunks: 1 }, { text: 'Fine.' }, { text: 'Fine.' }];
    const before = llm.requests.length;
    for (const [index, reply] of replies.entries()) {
      const name = index % 3 === 1 ? 'two' : 'one';
      chats[name] = [...chats[name], { role: 'user', content: `${name} call ${index}` }];
      llm.enqueue(reply);
      // A 500 is asked again by the SDK, a reply cut before its end by the client: each time with the same body.
      if (reply.status || reply.breakAfterChunks) llm.enqueue({ text: 'Fine.' });
      await model.complete(call('chat', { messages: chats[name] }));
      const copies = reply.status || reply.breakAfterChunks ? 2 : 1;
      for (let copy = 0; copy < copies; copy++) sent.push({ name, messages: chats[name].map((message) => ({ ...message })) });
    }
    const received = llm.requests.slice(before).map((request) => request.body.messages);
    expect(received).toEqual(sent.map(({ messages }) => messages));
  });

  it("sends the SDK's own headers, the key and the purpose headers on every call, streamed or not", async () => {
    for (const streaming of ['true', 'false']) {
      const { model } = modelClient({ LLM_STREAMING: streaming });
      llm.enqueue({ text: 'Fine.' });
      const before = llm.requests.length;
      expect((await model.complete(call('plan_execute.plan', { runId: 'run-1', nodeId: '2' }))).text).toBe('Fine.');
      const request = llm.requests[before]!;
      // Uncompressed: the size limits count what the endpoint sends.
      expect(request.headers).toMatchObject({ 'x-stainless-lang': 'js', authorization: 'Bearer test-key', 'accept-encoding': 'identity' });
      expect(request).toMatchObject({ path: '/v1/chat/completions', purpose: 'plan_execute.plan', runId: 'run-1', node: '2' });
      expect(request.body.stream).toBe(streaming === 'true');
      // The body goes as bytes Stepwise encodes; it still says what it is.
      expect(request.headers['content-type']).toBe('application/json');
    }
  });

  it('logs the x-request-id of each call', async () => {
    const { model, lines } = modelClient({ LOG_LEVEL: 'debug' });
    llm.enqueue({ text: 'Logged.', headers: { 'x-request-id': 'req_abc123' } }, { status: 400, headers: { 'x-request-id': 'req_failed9' } });
    await model.complete(call());
    await expect(model.complete(call())).rejects.toThrow(/answered 400/);
    expect(lines.find((line) => line.message === 'model call')?.object).toMatchObject({ purpose: 'chat', request_id: 'req_abc123' });
    expect(lines.find((line) => line.message === 'model call failed')?.object).toMatchObject({ status: 400, request_id: 'req_failed9' });
  });

  it('talks to Azure OpenAI: the deployment in the path, api-version in the query, the key as api-key', async () => {
    const { logger } = recordingLogger();
    const config = configFromEnv({
      LLM_PROVIDER: 'azure',
      AZURE_OPENAI_ENDPOINT: new URL(llm.url).origin,
      AZURE_OPENAI_API_KEY: 'azure-key',
      AZURE_OPENAI_DEPLOYMENT: 'team-gpt4o',
      OPENAI_API_VERSION: '2024-10-21',
    });
    llm.enqueue({ text: 'From Azure.' });
    const before = llm.requests.length;
    const result = await new OpenAiLlmClient(config, logger).complete(call());

    expect(result).toMatchObject({ text: 'From Azure.', model: 'team-gpt4o' });
    const request = llm.requests[before]!;
    expect(request.path).toBe('/openai/deployments/team-gpt4o/chat/completions');
    expect(request.query).toEqual({ 'api-version': '2024-10-21' });
    expect(request.headers['api-key']).toBe('azure-key');
    expect(request.headers.authorization).toBeUndefined();
    expect(request.purpose).toBe('chat');
  });

  it('stops startup when azure lacks its endpoint or API version, naming what is missing', () => {
    expect(() => configFromEnv({ LLM_PROVIDER: 'azure', AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com' })).toThrow(
      /Invalid LLM_PROVIDER: azure needs .*\(missing: OPENAI_API_VERSION\)/,
    );
  });

  it('merges LLM_PARAMS into every request body, and refuses invalid JSON naming the variable', async () => {
    const { model } = modelClient({ LLM_PARAMS: '{"reasoning_effort":"low","max_completion_tokens":4000,"seed":7}' });
    llm.enqueue({ text: 'With params.' });
    const before = llm.requests.length;
    await model.complete(call());
    expect(llm.requests[before]!.body).toMatchObject({ model: 'gpt-4o-mini', reasoning_effort: 'low', max_completion_tokens: 4000, seed: 7 });

    // Fields Stepwise sets win over the params'; fields a call leaves unset keep the params' value.
    const paramTool = { type: 'function', function: { name: 'lookup', description: 'From the params', parameters: { type: 'object' } } };
    const withFields = modelClient({
      LLM_PARAMS: JSON.stringify({ tools: [paramTool], stream: false, model: 'not-this', messages: [], stream_options: { include_usage: false } }),
    }).model;
    for (const tools of [undefined, [{ name: 'calculator', description: 'Arithmetic', parameters: { type: 'object' } }]]) {
      llm.enqueue({ text: 'Fields.' });
      const at = llm.requests.length;
      await withFields.complete(call('chat', tools ? { tools } : {}));
      const { body } = llm.requests[at]!;
      expect(body).toMatchObject({
        model: 'gpt-4o-mini',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Hello' }],
      });
      expect((body as Record<string, unknown>).tools).toEqual(tools ? [{ type: 'function', function: tools[0] }] : [paramTool]);
    }

    expect(() => configFromEnv({ LLM_PARAMS: '{reasoning_effort: low}' })).toThrow(/^Invalid LLM_PARAMS: must be a JSON object/);
    expect(() => configFromEnv({ LLM_PARAMS: '[1,2]' })).toThrow(/^Invalid LLM_PARAMS: must be a JSON object/);
  });

  it("sends each purpose to its model from the config file's models (first glob that matches), else LLM_MODEL", async () => {
    const { model } = modelClient({
      LLM_PARAMS: '{"seed":1}',
      ...configFile({
        models: {
          'research.*': { model: 'strong-planner', params: { reasoning_effort: 'high' } },
          'solver.expert_evaluator': { model: 'cheap-checker' },
          'research.task': { model: 'never-used' },
        },
      }),
    });
    const before = llm.requests.length;
    for (const purpose of ['research.plan', 'research.task', 'solver.expert_evaluator', 'solver.solve', 'chat']) {
      llm.enqueue({ text: 'ok' });
      expect((await model.complete(call(purpose))).model).toBeDefined();
    }
    expect(
      llm.requests
        .slice(before)
        .map((request) => [
          request.purpose,
          request.body.model,
          (request.body as Record<string, unknown>).reasoning_effort ?? null,
          (request.body as Record<string, unknown>).seed,
        ]),
    ).toEqual([
      ['research.plan', 'strong-planner', 'high', 1],
      ['research.task', 'strong-planner', 'high', 1],
      ['solver.expert_evaluator', 'cheap-checker', null, 1],
      ['solver.solve', 'gpt-4o-mini', null, 1],
      ['chat', 'gpt-4o-mini', null, 1],
    ]);
  });

  it('reads prompt, completion, cached and reasoning tokens and prices the call; an unknown model costs null', async () => {
    const usage = { prompt_tokens: 1_000, completion_tokens: 500, cached_tokens: 400, reasoning_tokens: 100 };
    const { model } = modelClient({ ...configFile({ models: { 'mystery.*': { model: 'in-house-llm' } } }) });
    llm.enqueue({ text: 'Priced.', usage }, { text: 'Unpriced.', usage });
    const priced = await model.complete(call());
    // gpt-4o-mini: 600 uncached at $0.15, 400 cached at $0.075, 500 out at $0.60 per million.
    expect(priced.usage).toEqual({ promptTokens: 1_000, completionTokens: 500, cachedTokens: 400, reasoningTokens: 100 });
    expect(priced.costUsd).toBeCloseTo(0.00042, 12);
    const unpriced = await model.complete(call('mystery.guess'));
    expect(unpriced).toMatchObject({ model: 'in-house-llm', costUsd: null });
  });

  it("prices from the config file's prices over the built-in table, also for a model it does not know", async () => {
    const { model } = modelClient({
      LLM_STREAMING: 'false',
      ...configFile({
        models: { 'mystery.*': { model: 'in-house-llm' } },
        prices: { 'gpt-4o-mini': { input: 1, output: 2 }, 'in-house-llm': { input: 10, cached_input: 1, output: 20 } },
      }),
    });
    llm.enqueue(
      { text: 'a', usage: { prompt_tokens: 1_000_000, completion_tokens: 1_000_000 } },
      { text: 'b', usage: { prompt_tokens: 2_000_000, completion_tokens: 0, cached_tokens: 1_000_000 } },
    );
    expect((await model.complete(call())).costUsd).toBe(3);
    expect((await model.complete(call('mystery.guess'))).costUsd).toBe(11);
  });

  it('refuses one stream event of many lines larger than the output cap allows, before the SDK buffers it', async () => {
    const { model } = modelClient({ LLM_MAX_OUTPUT_CHARS: '5000', LLM_MAX_RETRIES: '2' });
    llm.enqueue({ raw: `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n${'data: x\r\n'.repeat(200_000)}` });
    const before = llm.requests.length;
    await expect(model.complete(call())).rejects.toThrow(/^The model's reply was larger than [\d,]+ bytes/);
    expect(llm.requests.length - before).toBe(1);
  });

  it('turns a refusal into a ModelError of category refusal that says so, streamed or not', async () => {
    for (const streaming of ['true', 'false']) {
      const { model } = modelClient({ LLM_STREAMING: streaming, LLM_MAX_RETRIES: '0' });
      llm.enqueue({ refusal: "I can't help with that." });
      const error = await model.complete(call()).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ category: 'refusal', message: "The model refused to answer: I can't help with that." });
    }
  });

  it('keeps the connection of a long stream whose end comes after [DONE] (reads the end off rather than closing it)', async () => {
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    let closedEarly = 0;
    let tearingDown = false;
    // Each reply's body ends only when the next request comes (as a server may end it in a later write).
    let open: ServerResponse | undefined;
    const server = createServer((_request, response) => {
      open?.end();
      open = response;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 100; i++) response.write(chunk({ content: 'x'.repeat(1_000) }, null));
      response.write(`${chunk({}, 'stop')}data: [DONE]\n\n`);
    }).listen(0, '127.0.0.1');
    server.on('connection', (socket) => {
      socket.on('close', () => {
        if (!tearingDown) closedEarly++;
      });
    });
    await once(server, 'listening');
    try {
      const { model } = modelClient({ OPENAI_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, LLM_MAX_RETRIES: '0' });
      for (let i = 0; i < 3; i++) expect((await model.complete(call())).text).toHaveLength(100_000);
      expect(closedEarly).toBe(0);
    } finally {
      tearingDown = true;
      open?.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('reads a whole reply that begins with a byte order mark', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const completion = {
        id: 'c',
        object: 'chat.completion',
        created: 0,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Marked.' }, finish_reason: 'stop' }],
      };
      response.end(`\uFEFF${JSON.stringify(completion)}`);
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { model } = modelClient({
        OPENAI_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        LLM_STREAMING: 'false',
        LLM_MAX_RETRIES: '0',
      });
      expect((await model.complete(call())).text).toBe('Marked.');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('reports an endpoint that redirects with the address it points to (a path read against its own), without following it', async () => {
    let location = `${llm.url}/chat/completions?moved=1`;
    const redirecting = createServer((_request, response) => {
      response.writeHead(307, { location });
      response.end();
    }).listen(0, '127.0.0.1');
    await once(redirecting, 'listening');
    try {
      const before = llm.requests.length;
      const own = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`;
      const { model } = modelClient({ OPENAI_BASE_URL: `${own}/v1`, LLM_MAX_RETRIES: '0' });
      await expect(model.complete(call())).rejects.toThrow(`The model endpoint answered 307: it redirects to ${llm.url}/chat/completions; set OPENAI_BASE_URL`);
      expect(llm.requests.length).toBe(before);
      location = '/v2/chat/completions';
      await expect(model.complete(call())).rejects.toThrow(`The model endpoint answered 307: it redirects to ${own}/v2/chat/completions; set OPENAI_BASE_URL`);
    } finally {
      redirecting.closeAllConnections();
      await new Promise<void>((resolve) => redirecting.close(() => resolve()));
    }
  });
});

describe('the model wire through a proxy', () => {
  let proxy: ReturnType<typeof createProxy>;
  const proxied: string[] = [];
  beforeAll(async () => {
    proxy = createProxy(createServer());
    // Plain requests come as absolute URLs; undici tunnels even http through CONNECT.
    proxy.on('request', (request: IncomingMessage) => proxied.push(`${request.method} ${request.url}`));
    proxy.on('connect', (request: IncomingMessage) => proxied.push(`CONNECT ${request.url}`));
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
  });
  afterAll(async () => {
    proxy.closeAllConnections();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
  });
  const proxyUrl = () => `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  it('sends model calls and the health probe through HTTP_PROXY', async () => {
    proxied.length = 0;
    const { model } = modelClient({ HTTP_PROXY: proxyUrl() });
    llm.enqueue({ text: 'Through the proxy.' });
    expect((await model.complete(call())).text).toBe('Through the proxy.');
    const target = new URL(llm.url).host;
    expect(proxied).toEqual([`CONNECT ${target}`]);

    const { logger } = recordingLogger();
    const config = configFromEnv({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', HTTP_PROXY: proxyUrl() });
    // The scripted server has no model list: a 404 still says the endpoint answers.
    expect((await new ModelHealthMonitor(config, logger).probe()).status).toBe('ok');
    expect(proxied).toEqual([`CONNECT ${target}`, `CONNECT ${target}`]);
  });

  it('goes direct to hosts NO_PROXY names', async () => {
    proxied.length = 0;
    const { model } = modelClient({ HTTP_PROXY: proxyUrl(), NO_PROXY: '127.0.0.1' });
    llm.enqueue({ text: 'Direct.' });
    expect((await model.complete(call())).text).toBe('Direct.');
    expect(proxied).toEqual([]);
  });

  it('says the endpoint cannot be reached when the proxy is down', async () => {
    const dead = createServer().listen(0, '127.0.0.1');
    await once(dead, 'listening');
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const { model } = modelClient({ HTTP_PROXY: `http://127.0.0.1:${port}`, LLM_MAX_RETRIES: '0' });
    await expect(model.complete(call())).rejects.toThrow(/^Could not reach the model endpoint at/);
  });
});
