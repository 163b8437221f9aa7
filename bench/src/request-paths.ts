// 5. What one Chat Completions request costs the calling process by each way of making it: the
// openai SDK as an application uses it (parsed reply; the floor of section 1), the SDK returning
// the raw response for the caller to read (Stepwise's adapter before it made its own requests),
// fetch on its own with the body serialised once, and node:http on a keep-alive agent (Stepwise's
// adapter now). Same model server in its own process, same request bodies (small, and about
// 20 KiB of messages), whole and streamed replies; the caller's CPU per request
// (process.cpuUsage) and wall time, blocks of requests interleaved path by path, medians over blocks.
import { Agent, request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { startModelServer } from './processes.ts';
import { log, type Settings } from './settings.ts';
import { median, round } from './stats.ts';

const tools = [
  { type: 'function' as const, function: { name: 'calculator', description: 'Evaluate', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } },
];
const filler = 'The user asks for the product of two sums; the calculator tool will do it. ';
const BODIES: Record<string, Body> = {
  small: { model: 'bench', messages: [{ role: 'system', content: 'You are a helpful agent.' }, { role: 'user', content: 'Count with the calculator.' }], tools },
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

function paths(baseUrl: string, agent: Agent): Record<string, Path> {
  const base = baseUrl.replace(/\/$/, '');
  const sdk = new OpenAI({ baseURL: baseUrl, apiKey: 'bench', maxRetries: 0 });
  return {
    'openai SDK, parsed reply (the floor)': async (body, stream) => {
      if (!stream) return sdk.chat.completions.create(body, { headers: purpose(false) });
      let text = '';
      for await (const chunk of await sdk.chat.completions.create({ ...body, stream: true }, { headers: purpose(true) })) {
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      return text;
    },
    'openai SDK, raw response read by the caller': async (body, stream) => {
      const response = await sdk.chat.completions.create({ ...body, stream }, { headers: purpose(stream) }).asResponse();
      return response.text();
    },
    'fetch, body serialised once': async (body, stream) => {
      const response = await fetch(`${base}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench', ...purpose(stream) },
        body: JSON.stringify({ ...body, stream }),
        signal: new AbortController().signal,
      });
      return response.text();
    },
    'node:http, keep-alive agent (Stepwise now)': (body, stream) =>
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
  const contenders = paths(model.url, agent);
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
      log(`   ${size}, ${stream ? 'streamed' : 'whole'}: ${rows.slice(-names.length).map((row) => `${row.cpuUs} µs`).join(', ')}`);
    }
  }
  agent.destroy();
  await model.stop();
  return { blocks: settings.pathBlocks, requests: settings.pathRequests, serialise, rows };
}
