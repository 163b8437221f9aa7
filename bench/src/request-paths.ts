// 5. What one Chat Completions request costs the calling process by each way of making it: the
// openai SDK as an application uses it (parsed reply, global fetch; the floor of section 1), the
// SDK on undici's fetch with a keep-alive Agent (the wire Stepwise builds), Stepwise's adapter
// whole (OpenAiLlmClient.complete: that wire plus the bounded body, the clocks, the reply's
// assembly under LLM_MAX_OUTPUT_CHARS, usage and cost), and node:http on a keep-alive agent (the
// hand-made path the adapter used before it moved onto the SDK, for reference). Same model server
// in its own process, same request bodies (small, and about 20 KiB of messages), whole and
// streamed replies; the caller's CPU per request (process.cpuUsage) and wall time, blocks of
// requests interleaved path by path, medians over blocks.
import { Agent, request as httpRequest } from 'node:http';
import { configFromEnv, type LlmMessage, type Logger, OpenAiLlmClient } from '@stepwise/backend';
import OpenAI from 'openai';
import { Agent as UndiciAgent, fetch as undiciFetch } from 'undici';
import { startModelServer } from './processes.ts';
import { log, type Settings } from './settings.ts';
import { median, round } from './stats.ts';

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'calculator',
      description: 'Evaluate',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
  },
];
const filler = 'The user asks for the product of two sums; the calculator tool will do it. ';
const BODIES: Record<string, Body> = {
  small: {
    model: 'bench',
    messages: [
      { role: 'system', content: 'You are a helpful agent.' },
      { role: 'user', content: 'Count with the calculator.' },
    ],
    tools,
  },
  '20 KiB': {
    model: 'bench',
    messages: [
      { role: 'system', content: filler.repeat(90) },
      { role: 'user', content: 'Count with the calculator.' },
      ...Array.from({ length: 20 }, (_, index) => ({ role: 'assistant' as const, content: filler.repeat(8) + index })),
    ],
    tools,
  },
};
/** The model server answers `roa.act` with a tool call, `roa.reason` with text (streamed when asked). */
const purpose = (stream: boolean) => ({ 'X-Stepwise-Purpose': stream ? 'roa.reason' : 'roa.act' });

type Body = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
type Path = (body: Body, stream: boolean) => Promise<unknown>;

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

/** Reads the SDK's reply as an application does: the parsed completion, or the streamed text. */
async function parsedReply(client: OpenAI, body: Body, stream: boolean): Promise<unknown> {
  if (!stream) return client.chat.completions.create(body, { headers: purpose(false) });
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true }, { headers: purpose(true) })) {
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  return text;
}

function paths(baseUrl: string, agent: Agent, dispatcher: UndiciAgent): Record<string, Path> {
  const base = baseUrl.replace(/\/$/, '');
  const sdk = new OpenAI({ baseURL: baseUrl, apiKey: 'bench', maxRetries: 0 });
  const sdkOnUndici = new OpenAI({
    baseURL: baseUrl,
    apiKey: 'bench',
    maxRetries: 0,
    fetch: ((input: string, init?: RequestInit) =>
      undiciFetch(input, { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1])) as unknown as typeof fetch,
  });
  const adapter = (streaming: boolean) =>
    new OpenAiLlmClient(
      configFromEnv({
        LLM_PROVIDER: 'openai',
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: 'bench',
        LLM_MODEL: 'bench',
        LLM_STREAMING: String(streaming),
        LLM_MAX_RETRIES: '0',
      }),
      silent,
    );
  const adapters = { whole: adapter(false), streamed: adapter(true) };
  return {
    'openai SDK, parsed reply, global fetch (the floor)': (body, stream) => parsedReply(sdk, body, stream),
    'openai SDK, parsed reply, undici fetch on a keep-alive Agent': (body, stream) => parsedReply(sdkOnUndici, body, stream),
    "Stepwise's adapter on the SDK (OpenAiLlmClient.complete)": (body, stream) =>
      adapters[stream ? 'streamed' : 'whole'].complete({
        purpose: stream ? 'roa.reason' : 'roa.act',
        messages: body.messages as LlmMessage[],
        tools: (body.tools ?? []).map((tool) => {
          const fn = (tool as { function: { name: string; description?: string; parameters?: Record<string, unknown> } }).function;
          return { name: fn.name, description: fn.description ?? '', parameters: fn.parameters ?? {} };
        }),
        signal: new AbortController().signal,
      }),
    'node:http, keep-alive agent (the hand-made path before)': (body, stream) =>
      new Promise((resolve, reject) => {
        const payload = Buffer.from(JSON.stringify({ ...body, stream }));
        const outgoing = httpRequest(`${base}/chat/completions`, {
          method: 'POST',
          agent,
          signal: new AbortController().signal,
          headers: { 'content-type': 'application/json', 'content-length': payload.byteLength, authorization: 'Bearer bench', ...purpose(stream) },
        });
        outgoing.on('response', (response) => {
          const parts: Buffer[] = [];
          response.on('data', (part: Buffer) => parts.push(part));
          response.on('end', () => resolve(Buffer.concat(parts).toString()));
          response.on('error', reject);
        });
        outgoing.on('error', reject);
        outgoing.end(payload);
      }),
  };
}

export async function requestPaths(settings: Settings) {
  log(`5. one request by each HTTP path: ${settings.pathBlocks} blocks of ${settings.pathRequests} requests per path, body size and reply kind`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
  const agent = new Agent({ keepAlive: true });
  const dispatcher = new UndiciAgent({ keepAliveTimeout: 4_000 });
  const contenders = paths(model.url, agent, dispatcher);
  const names = Object.keys(contenders);
  const rows = [];
  const serialise = [];
  for (const [size, body] of Object.entries(BODIES)) {
    const cpu = process.cpuUsage();
    for (let index = 0; index < 2_000; index++) JSON.stringify(body);
    const used = process.cpuUsage(cpu);
    serialise.push({ size, kb: round(JSON.stringify(body).length / 1024, 1), us: round((used.user + used.system) / 2_000, 1) });
    for (const stream of [false, true]) {
      const cpuUs = new Map<string, number[]>(names.map((name) => [name, []]));
      const wallUs = new Map<string, number[]>(names.map((name) => [name, []]));
      for (let block = -1; block < settings.pathBlocks; block++) {
        const offset = ((block % names.length) + names.length) % names.length;
        for (const name of [...names.slice(offset), ...names.slice(0, offset)]) {
          const before = process.cpuUsage();
          const started = performance.now();
          for (let index = 0; index < settings.pathRequests; index++) await contenders[name]!(body, stream);
          const ms = performance.now() - started;
          const spent = process.cpuUsage(before);
          if (block < 0) continue; // warm-up
          cpuUs.get(name)!.push((spent.user + spent.system) / settings.pathRequests);
          wallUs.get(name)!.push((ms * 1000) / settings.pathRequests);
        }
      }
      const floor = median(cpuUs.get(names[0]!)!);
      for (const name of names) {
        const cpuMedian = median(cpuUs.get(name)!);
        rows.push({ path: name, size, stream, wallUs: round(median(wallUs.get(name)!), 0), cpuUs: round(cpuMedian, 0), cpuVsSdk: round(cpuMedian / floor, 2) });
      }
      log(
        `   ${size}, ${stream ? 'streamed' : 'whole'}: ${rows
          .slice(-names.length)
          .map((row) => `${row.cpuUs} µs`)
          .join(', ')}`,
      );
    }
  }
  agent.destroy();
  await dispatcher.close();
  await model.stop();
  return { blocks: settings.pathBlocks, requests: settings.pathRequests, serialise, rows };
}
