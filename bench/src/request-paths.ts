// What one Chat Completions request costs the calling process by each way of making it: the openai
// SDK as an application uses it (parsed reply), the SDK returning the raw response (as Stepwise's
// adapter used it), fetch on its own, and node:http with a keep-alive agent. Same model server (in
// its own process), same request body (small, and about 20 KiB of messages), whole replies and
// streamed ones; CPU of this process per request (process.cpuUsage) and wall time, blocks of
// requests interleaved path by path, medians over blocks.
//   cd bench && TSX_TSCONFIG_PATH=../backend/tsconfig.json node --import tsx src/request-paths.ts [--requests=300] [--blocks=9]
import './guard.ts';
import { Agent, request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { startModelServer } from './processes.ts';
import { median } from './stats.ts';

const argument = (name: string) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
const perBlock = Number(argument('requests') ?? 300);
const blocks = Number(argument('blocks') ?? 9);

const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
const base = model.url.replace(/\/$/, '');
const tools = [{ type: 'function' as const, function: { name: 'calculator', description: 'Evaluate', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } }];
const filler = 'The user asks for the product of two sums; the calculator tool will do it. ';
const bodies = {
  small: { model: 'bench', messages: [{ role: 'system' as const, content: 'You are a helpful agent.' }, { role: 'user' as const, content: 'Count with the calculator.' }], tools },
  '20 KiB': {
    model: 'bench',
    messages: [
      { role: 'system' as const, content: filler.repeat(90) },
      { role: 'user' as const, content: 'Count with the calculator.' },
      ...Array.from({ length: 20 }, (_, index) => ({ role: 'assistant' as const, content: filler.repeat(8) + index })),
    ],
    tools,
  },
};
// The model server answers a tool call to `roa.act` and streamed text to `roa.reason`.
const headers = (stream: boolean) => ({ 'X-Stepwise-Purpose': stream ? 'roa.reason' : 'roa.act' });

const sdk = new OpenAI({ baseURL: model.url, apiKey: 'bench', maxRetries: 0 });
const agent = new Agent({ keepAlive: true });

type Path = (body: object, stream: boolean) => Promise<unknown>;
const paths: Record<string, Path> = {
  'openai SDK, parsed reply (the floor)': async (body, stream) => {
    if (!stream) return sdk.chat.completions.create(body as never, { headers: headers(false) });
    let text = '';
    for await (const chunk of await sdk.chat.completions.create({ ...(body as never), stream: true }, { headers: headers(true) })) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  },
  'openai SDK, raw response read by the caller': async (body, stream) => {
    const response = await sdk.chat.completions.create({ ...(body as never), stream }, { headers: headers(stream) }).asResponse();
    return response.text();
  },
  'fetch, body serialised once': async (body, stream) => {
    const response = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench', ...headers(stream) },
      body: JSON.stringify({ ...body, stream }),
      signal: new AbortController().signal,
    });
    return response.text();
  },
  'node:http, keep-alive agent': (body, stream) =>
    new Promise((resolve, reject) => {
      const payload = JSON.stringify({ ...body, stream });
      const controller = new AbortController();
      const outgoing = httpRequest(`${base}/chat/completions`, {
        method: 'POST',
        agent,
        signal: controller.signal,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), authorization: 'Bearer bench', ...headers(stream) },
      });
      outgoing.on('response', async (response) => {
        const parts: string[] = [];
        response.setEncoding('utf8');
        for await (const part of response) parts.push(part as string);
        resolve(parts.join(''));
      });
      outgoing.on('error', reject);
      outgoing.end(payload);
    }),
};

const rows: string[] = [];
for (const [size, body] of Object.entries(bodies)) {
  const serialised = JSON.stringify(body);
  const serialiseStarted = process.cpuUsage();
  for (let index = 0; index < 2000; index++) JSON.stringify(body);
  const serialiseCpu = process.cpuUsage(serialiseStarted);
  rows.push(`| JSON.stringify of the ${size} body alone (${(serialised.length / 1024).toFixed(1)} KiB) | — | ${((serialiseCpu.user + serialiseCpu.system) / 2000).toFixed(0)} µs | — |`);
  for (const stream of [false, true]) {
    const cpu = new Map<string, number[]>();
    const wall = new Map<string, number[]>();
    for (let block = -1; block < blocks; block++) {
      const names = Object.keys(paths);
      const order = [...names.slice(block % names.length), ...names.slice(0, block % names.length)];
      for (const name of order) {
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        for (let index = 0; index < perBlock; index++) await paths[name]!(body, stream);
        const ms = performance.now() - started;
        const used = process.cpuUsage(cpuBefore);
        if (block < 0) continue; // warm-up
        cpu.set(name, [...(cpu.get(name) ?? []), (used.user + used.system) / perBlock]);
        wall.set(name, [...(wall.get(name) ?? []), (ms * 1000) / perBlock]);
      }
    }
    const floor = median(cpu.get(Object.keys(paths)[0]!)!);
    for (const name of Object.keys(paths)) {
      const cpuUs = median(cpu.get(name)!);
      rows.push(`| ${name}, ${size}, ${stream ? 'streamed' : 'whole'} | ${median(wall.get(name)!).toFixed(0)} µs | ${cpuUs.toFixed(0)} µs | ${(cpuUs / floor).toFixed(2)}× |`);
    }
  }
}
console.log('| path, request body, reply | wall per request (median) | CPU of the caller per request (median) | CPU vs the SDK, parsed |');
console.log('| --- | ---: | ---: | ---: |');
for (const row of rows) console.log(row);
agent.destroy();
await model.stop();
process.exit(0);
