// `pnpm bench` (or `pnpm bench --quick`): Stepwise against the frameworks people would pick instead,
// and against the floor of bare openai SDK calls, on this machine. Writes bench/RESULTS.md and
// bench/results.json (with --quick: bench/out/, so a smoke run never overwrites real figures).
import './guard.ts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { cpuMs, currentRss, peakRss, root, startModelServer, startStepwise, startWorker } from './processes.ts';
import { startTestPostgres } from '../../scripts/postgres.mjs';
import { mb, median, quantile, round } from './stats.ts';

const quick = process.argv.includes('--quick');
/** `--only=overhead,concurrency` runs a subset (for profiling); the report then holds just those. */
const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length).split(',');
const sessionsArg = process.argv.find((arg) => arg.startsWith('--sessions='))?.slice('--sessions='.length);
const wanted = (name: string) => !only || only.includes(name);
const settings = quick
  ? { steps: 3, warmup: 1, rounds: 3, stopTrials: 10, sessions: [20, 50], tokens: 2_000 }
  : { steps: 20, warmup: 3, rounds: 15, stopTrials: 200, sessions: [100, 500, 1000, 2000], tokens: 20_000 };
if (sessionsArg) settings.sessions = sessionsArg.split(',').map(Number);
const now = () => performance.timeOrigin + performance.now();
const log = (line: string) => process.stdout.write(`${line}\n`);

const PEERS = [
  { key: 'stepwise', name: 'Stepwise (streaming, the default)' },
  { key: 'stepwise-plain', name: 'Stepwise (LLM_STREAMING=false)' },
  { key: 'agents', name: 'OpenAI Agents SDK' },
  { key: 'ai', name: 'Vercel AI SDK' },
  { key: 'langgraph', name: 'LangGraph.js' },
] as const;

/** 1. Overhead per model call above bare SDK calls, interleaved rounds, ratio within each round. */
async function overhead() {
  log(`1. overhead per model call: ${settings.steps} tool steps per task, ${settings.rounds} rounds`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: String(settings.steps) });
  const servers = {
    stepwise: await startStepwise(model.url),
    'stepwise-plain': await startStepwise(model.url, { LLM_STREAMING: 'false' }),
  };
  const workers = {
    floor: await startWorker('floor', model.url),
    stepwise: await startWorker('stepwise', servers.stepwise.wsUrl),
    'stepwise-plain': await startWorker('stepwise', servers['stepwise-plain'].wsUrl),
    agents: await startWorker('agents', model.url),
    ai: await startWorker('ai', model.url),
    langgraph: await startWorker('langgraph', model.url),
  };
  const perCall: Record<string, number[]> = {};
  const ratios: Record<string, number[]> = {};
  const calls: Record<string, number> = {};
  const rss: Record<string, number> = {};
  for (let round = -settings.warmup; round < settings.rounds; round++) {
    const floor = await workers.floor.task(settings.steps);
    const floorPerCall = floor.ms / floor.calls;
    if (round >= 0) (perCall.floor ??= []).push(floorPerCall);
    calls.floor = floor.calls;
    for (const peer of PEERS) {
      const result = await workers[peer.key].task(settings.steps);
      calls[peer.key] = result.calls;
      rss[peer.key] = result.rss;
      if (round < 0) continue;
      (perCall[peer.key] ??= []).push(result.ms / result.calls);
      (ratios[peer.key] ??= []).push(result.ms / result.calls / floorPerCall);
    }
  }
  rss.floor = (await workers.floor.task(1)).rss;
  const floorMedian = median(perCall.floor!);
  const rows = [
    { key: 'floor', name: 'openai SDK calls (floor)', calls: calls.floor!, perCallMs: floorMedian, overheadP50Us: 0, overheadP95Us: 0, ratio: 1, rssMb: mb(rss.floor!) },
    ...PEERS.map((peer) => {
      const overheads = perCall[peer.key]!.map((value, index) => (value - perCall.floor![index]!) * 1000);
      return {
        key: peer.key,
        name: peer.name,
        calls: calls[peer.key]!,
        perCallMs: median(perCall[peer.key]!),
        overheadP50Us: median(overheads),
        overheadP95Us: quantile(overheads, 0.95),
        ratio: median(ratios[peer.key]!),
        rssMb: mb(rss[peer.key]!),
        ...(peer.key.startsWith('stepwise') ? { serverRssMb: mb(peakRss(servers[peer.key as 'stepwise'].pid)) } : {}),
      };
    }),
  ];
  for (const worker of Object.values(workers)) await worker.exit();
  for (const server of Object.values(servers)) await server.stop();
  await model.stop();
  return { steps: settings.steps, rounds: settings.rounds, rows };
}

/** 2. Stop latency during a 10 s model call: to the end seen by the caller, and to the upstream close. */
async function stopLatency() {
  log(`2. stop latency: ${settings.stopTrials} stops per framework during a 10 s model call`);
  const model = await startModelServer({ BENCH_MODE: 'slow' });
  const server = await startStepwise(model.url);
  const targets = [
    { key: 'stepwise', name: 'Stepwise (stop message → agent_stopped)', worker: await startWorker('stepwise', server.wsUrl) },
    { key: 'floor', name: 'openai SDK (AbortSignal)', worker: await startWorker('floor', model.url) },
    { key: 'agents', name: 'OpenAI Agents SDK (signal)', worker: await startWorker('agents', model.url) },
    { key: 'ai', name: 'Vercel AI SDK (abortSignal)', worker: await startWorker('ai', model.url) },
    { key: 'langgraph', name: 'LangGraph.js (signal)', worker: await startWorker('langgraph', model.url) },
  ];
  const rows = [];
  for (const target of targets) {
    const toEnd: number[] = [];
    const toClose: number[] = [];
    for (let trial = 0; trial < settings.stopTrials; trial++) {
      const marker = `stop-${target.key}-${trial}`;
      const { stopAt, endedAt } = await target.worker.stop(marker, model.stats);
      toEnd.push(endedAt - stopAt);
      let closedAt: number | null = null;
      for (let attempt = 0; attempt < 40 && closedAt === null; attempt++) {
        const stats = (await (await fetch(`${model.stats}/closed?marker=${encodeURIComponent(marker)}`)).json()) as { closedAt?: number | null };
        closedAt = stats.closedAt ?? null;
        if (closedAt === null) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      toClose.push(closedAt === null ? Number.POSITIVE_INFINITY : closedAt - stopAt);
    }
    const summary = (values: number[]) => ({ p50: round(median(values), 2), p99: round(quantile(values, 0.99), 2), max: round(Math.max(...values), 2) });
    rows.push({ key: target.key, name: target.name, toEndMs: summary(toEnd), toUpstreamCloseMs: summary(toClose) });
    await target.worker.exit();
  }
  await server.stop();
  await model.stop();
  return { trials: settings.stopTrials, rows };
}

interface Client {
  socket: WebSocket;
  done: Promise<void>;
  lags: number[];
}

function openClient(wsUrl: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl);
    const lags: number[] = [];
    let finish: () => void = () => undefined;
    const done = new Promise<void>((resolveDone) => (finish = resolveDone));
    socket.on('message', (data) => {
      const received = now();
      const event = JSON.parse(data.toString()) as { type: string; update_type?: string; content?: string };
      if (event.type === 'session') resolve({ socket, done, lags });
      if (event.update_type === 'agent_reason' || event.update_type === 'agent_observe') {
        const sentAt = Number(/(\d{13}\.\d+)/.exec(event.content ?? '')?.[1]);
        if (sentAt) lags.push(received - sentAt);
      }
      if (event.type === 'response_complete') finish();
    });
    socket.on('error', reject);
  });
}

/** 3. Many sessions at once, each a three-step run against a model that takes 250 ms per call. */
async function concurrency() {
  log(`3. concurrency: ${settings.sessions.join(', ')} sessions, three-step runs, 250 ms per model call`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '3', BENCH_LATENCY_MS: '250' });
  // The default embedded database, and a PostgreSQL server (the test suite's throwaway one) when it can start.
  const postgres = await startTestPostgres().catch((error: Error) => {
    log(`   (no PostgreSQL: ${error.message.split('\n')[0]})`);
    return undefined;
  });
  const stores = [
    { store: 'embedded (PGlite)', env: {} as Record<string, string> },
    ...(postgres ? [{ store: 'PostgreSQL', env: { DATABASE_URL: postgres.url } }] : []),
  ];
  const rows = [];
  for (const { store, env } of stores) {
   for (const sessions of settings.sessions) {
    const server = await startStepwise(model.url, env);
    const warm = await openClient(server.wsUrl);
    warm.socket.send(JSON.stringify({ type: 'chat', content: 'warm up', agent_mode: true, agent_max_steps: 3 }));
    await warm.done;
    const before = currentRss(server.pid);
    const clients: Client[] = [];
    for (let index = 0; index < sessions; index += 50) {
      clients.push(...(await Promise.all(Array.from({ length: Math.min(50, sessions - index) }, () => openClient(server.wsUrl)))));
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idleRssPerSessionKb = (currentRss(server.pid) - before) / sessions / 1024;
    const cpuBefore = cpuMs(server.pid);
    const started = now();
    for (const client of clients) client.socket.send(JSON.stringify({ type: 'chat', content: 'Count', agent_mode: true, agent_max_steps: 3 }));
    await Promise.all(clients.map((client) => client.done));
    const totalMs = now() - started;
    const lags = clients.flatMap((client) => client.lags);
    const idealMs = 9 * 250;
    rows.push({
      store,
      sessions,
      totalMs: round(totalMs, 0),
      idealMs,
      lagP50Ms: round(median(lags), 1),
      lagP99Ms: round(quantile(lags, 0.99), 1),
      idleRssPerSessionKb: round(idleRssPerSessionKb, 0),
      peakRssMb: mb(peakRss(server.pid)),
      cpuPercent: round(((cpuMs(server.pid) - cpuBefore) / totalMs) * 100, 0),
    });
    log(`   ${sessions} sessions: ${JSON.stringify(rows.at(-1))}`);
    for (const client of [warm, ...clients]) client.socket.close();
    await server.stop();
   }
  }
  await model.stop();
  await postgres?.stop();
  const largest = (name: string) => Math.max(0, ...rows.filter((row) => row.store === name && row.lagP99Ms < 100).map((row) => row.sessions));
  return { rows, largestUnder100ms: Object.fromEntries(stores.map(({ store }) => [store, largest(store)])) };
}

/** 4. A model streaming many tokens as fast as the socket takes them. */
async function streaming() {
  log(`4. streaming relay: ${settings.tokens} tokens`);
  const model = await startModelServer({ BENCH_MODE: 'stream', BENCH_TOKENS: String(settings.tokens) });
  const server = await startStepwise(model.url);
  const OpenAI = (await import('openai')).default;
  const client = new OpenAI({ baseURL: model.url, apiKey: 'bench', maxRetries: 0 });
  const floor: number[] = [];
  const relay: number[] = [];
  let stepwiseFrames = 0;
  let stepwiseTokens = 0;
  for (let round = 0; round < 3; round++) {
    let started = now();
    let chunks = 0;
    for await (const chunk of await client.chat.completions.create({ model: 'bench', messages: [{ role: 'user', content: 'stream' }], stream: true })) {
      if (chunk.choices[0]?.delta?.content) chunks++;
    }
    floor.push(now() - started);
    const socket = await openClient(server.wsUrl);
    let frames = 0;
    let characters = 0;
    socket.socket.on('message', (data) => {
      const text = data.toString();
      if (!text.startsWith('{"type":"assistant_delta"')) return;
      frames++;
      characters += (JSON.parse(text) as { delta: string }).delta.length;
    });
    started = now();
    socket.socket.send(JSON.stringify({ type: 'chat', content: 'stream' }));
    await socket.done;
    relay.push(now() - started);
    stepwiseFrames = frames;
    stepwiseTokens = characters / 4; // the model streams 'tok ' tokens
    socket.socket.close();
    if (chunks !== settings.tokens) log(`   note: the floor saw ${chunks} chunks`);
  }
  await server.stop();
  await model.stop();
  const floorMs = median(floor);
  const relayMs = median(relay);
  return {
    tokens: settings.tokens,
    tokensAtClient: stepwiseTokens,
    framesAtClient: stepwiseFrames,
    floorTokensPerSecond: round(settings.tokens / (floorMs / 1000), 0),
    stepwiseTokensPerSecond: round(stepwiseTokens / (relayMs / 1000), 0),
    addedLatencyPerTokenUs: round(((relayMs - floorMs) / settings.tokens) * 1000, 1),
  };
}

const started = new Date();
const results = {
  date: started.toISOString(),
  quick,
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGb: round(totalmem() / 1024 ** 3, 0), node: process.version, platform: process.platform },
  overhead: wanted('overhead') ? await overhead() : undefined,
  stop: wanted('stop') ? await stopLatency() : undefined,
  concurrency: wanted('concurrency') ? await concurrency() : undefined,
  streaming: wanted('streaming') ? await streaming() : undefined,
};
const folder = quick || only ? join(root, 'bench', 'out') : join(root, 'bench');
mkdirSync(folder, { recursive: true });
writeFileSync(join(folder, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(join(folder, 'RESULTS.md'), (await import('./report.ts')).report(results));
log(`wrote ${join(folder, 'RESULTS.md')} in ${round((Date.now() - started.getTime()) / 1000, 0)} s`);
process.exit(0);
