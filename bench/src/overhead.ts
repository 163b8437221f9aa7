// 1. Time and CPU per model call above bare openai SDK calls (the floor). Every framework runs in a
// warm process of its own (each first makes settings.warmupCalls model calls, so that all are
// measured at their steady speed); Stepwise's server is a process of its own too, its client another. In
// each round every contender runs once, in an order that rotates from round to round, and each run
// is paired with a floor run just before it: the ratio is taken within that pair, the median over
// rounds, so that the machine's drift over a run falls on both sides of every ratio alike. Each
// contender and the floor first run untimed tasks in turn (settings.rewarmCalls): a process that
// idled is slow for a while on this machine.
import type { StepwiseChat } from './frameworks.ts';
import { cpuMs, currentRss, peakRss, startModelServer, startWorker, type TaskResult, type Worker } from './processes.ts';
import { log, type Settings } from './settings.ts';
import { mb, median, quantile } from './stats.ts';
import { startStepwise, type StepwiseServer } from './stepwise-server.ts';
import type { StoreSetup, Stores } from './stores.ts';

interface Contender {
  key: string;
  name: string;
  worker: Worker;
  stepwise?: { server: StepwiseServer; chat: StepwiseChat; streaming: boolean; store: string };
  /** Not a framework: the floor plus one journal commit per call on this store. */
  bound?: { store: string };
}

/** What the runs of one contender add up to. */
interface Tally {
  perCall: number[];
  overheadsUs: number[];
  ratios: number[];
  prepareMs: number[];
  calls: number;
  callsTotal: number;
  cpuUs: number;
  serverCpuMs: number;
  requests: number;
  requestBytes: number;
  requestMaxBytes: number;
  rss: number;
}

const emptyTally = (): Tally => ({
  perCall: [],
  overheadsUs: [],
  ratios: [],
  prepareMs: [],
  calls: 0,
  callsTotal: 0,
  cpuUs: 0,
  serverCpuMs: 0,
  requests: 0,
  requestBytes: 0,
  requestMaxBytes: 0,
  rss: 0,
});

export async function overhead(settings: Settings, stores: Stores) {
  log(`1. overhead per model call: ${settings.steps} tool steps per task, ${settings.rounds} rounds`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: String(settings.steps) });
  const bodies = async () => (await (await fetch(`${model.stats}/bodies`)).json()) as { requests: number; bytes: number; maxBytes: number };
  const floor = await startWorker('floor', model.url);
  const contenders: Contender[] = [];
  const addStepwise = async (key: string, name: string, store: StoreSetup, chat: StepwiseChat, streaming: boolean) => {
    const server = await startStepwise(model.url, { env: { ...(await store.env()), ...(streaming ? {} : { LLM_STREAMING: 'false' }) } });
    const worker = await startWorker(`stepwise-${chat}`, server.wsUrl);
    contenders.push({ key, name, worker, stepwise: { server, chat, streaming, store: store.label } });
  };
  const stepwiseStores = [...stores.embeddedVariants, ...(stores.postgres ? [stores.postgres] : [])];
  for (const store of stepwiseStores) await addStepwise(`stepwise-${store.key}`, `Stepwise, streaming (the default), ${store.label}`, store, 'fresh', true);
  for (const store of stores.embeddedVariants)
    await addStepwise(`stepwise-plain-${store.key}`, `Stepwise, LLM_STREAMING=false, ${store.label}`, store, 'fresh', false);
  const growingStore = stores.embeddedVariants[0]!;
  await addStepwise('stepwise-growing', `Stepwise, streaming, ${growingStore.label}, one growing chat for every task`, growingStore, 'growing', true);
  // What one journal commit per model call costs by itself on each store: the floor's own loop with
  // each reply committed before its tool runs (see journaledFloor).
  for (const store of stepwiseStores) {
    const sync = store.key === 'embedded-full' ? 'full' : 'normal';
    const worker =
      store.key === 'postgres'
        ? await startWorker('floor-journal-pg', model.url, (await store.env()).DATABASE_URL!)
        : await startWorker(sync === 'full' ? 'floor-journal-full' : 'floor-journal', model.url);
    const where = store.key === 'postgres' ? 'PostgreSQL' : `SQLite, synchronous=${sync}`;
    contenders.push({
      key: `bound-${store.key}`,
      name: `openai SDK calls + one ${where} journal commit per call (not a framework)`,
      worker,
      bound: { store: store.label },
    });
  }
  for (const [key, name] of [
    ['agents', 'OpenAI Agents SDK'],
    ['ai', 'Vercel AI SDK'],
    ['langgraph', 'LangGraph.js'],
  ] as const) {
    contenders.push({ key, name, worker: await startWorker(key, model.url) });
  }

  const floorTally = emptyTally();
  const tallies = new Map(contenders.map((contender) => [contender.key, emptyTally()]));
  /** One task of a worker, with its server's CPU time and the request bodies it sent. */
  const run = async (worker: Worker, server?: StepwiseServer) => {
    await bodies(); // forget what came before
    const serverCpuBefore = server ? cpuMs(server.pid) : 0;
    const result = await worker.task(settings.steps);
    const serverCpuMs = server ? cpuMs(server.pid) - serverCpuBefore : 0;
    return { result, serverCpuMs, sent: await bodies() };
  };
  const add = (tally: Tally, { result, serverCpuMs, sent }: { result: TaskResult; serverCpuMs: number; sent: Awaited<ReturnType<typeof bodies>> }) => {
    tally.perCall.push(result.ms / result.calls);
    tally.prepareMs.push(result.prepareMs);
    tally.calls = result.calls;
    tally.callsTotal += result.calls;
    tally.cpuUs += result.cpuUs;
    tally.serverCpuMs += serverCpuMs;
    tally.requests += sent.requests;
    tally.requestBytes += sent.bytes;
    tally.requestMaxBytes = Math.max(tally.requestMaxBytes, sent.maxBytes);
    tally.rss = result.rss;
  };
  // Every process to its steady speed first, the floor too (see settings.warmupCalls).
  for (const worker of [floor, ...contenders.map((contender) => contender.worker)]) {
    for (let calls = 0; calls < settings.warmupCalls; ) calls += (await worker.task(settings.steps)).calls;
  }
  log(`   every process warmed up with ${settings.warmupCalls} model calls`);
  for (let round = -settings.warmup; round < settings.rounds; round++) {
    const offset = ((round % contenders.length) + contenders.length) % contenders.length;
    for (const contender of [...contenders.slice(offset), ...contenders.slice(0, offset)]) {
      // Each contender idles while the others run, and the floor while a contender warms up. Untimed
      // tasks of both, in turn, first bring them back to the speed of a process in use (see settings.rewarmCalls).
      // Both sides in turn, so that neither idles while the other warms up.
      for (let calls = 0, floorCalls = 0; calls === 0 || calls < settings.rewarmCalls || floorCalls < settings.rewarmCalls; ) {
        calls += (await contender.worker.task(settings.steps)).calls;
        floorCalls += (await floor.task(settings.steps)).calls;
      }
      const floorRun = await run(floor);
      const contenderRun = await run(contender.worker, contender.stepwise?.server);
      if (round < 0) continue;
      const floorPerCall = floorRun.result.ms / floorRun.result.calls;
      const perCall = contenderRun.result.ms / contenderRun.result.calls;
      add(floorTally, floorRun);
      const tally = tallies.get(contender.key)!;
      add(tally, contenderRun);
      tally.overheadsUs.push((perCall - floorPerCall) * 1000);
      tally.ratios.push(perCall / floorPerCall);
    }
  }

  const requestCells = (tally: Tally) =>
    tally.requests ? { requestKbMean: tally.requestBytes / tally.requests / 1024, requestKbMax: tally.requestMaxBytes / 1024 } : {};
  const rows = [
    {
      key: 'floor',
      name: 'openai SDK calls (floor)',
      kind: 'floor',
      calls: floorTally.calls,
      perCallMs: median(floorTally.perCall),
      overheadP50Us: 0,
      overheadP95Us: 0,
      ratio: 1,
      cpuUsPerCall: floorTally.cpuUs / floorTally.callsTotal,
      rssMb: mb(floorTally.rss),
      ...requestCells(floorTally),
    },
    ...contenders.map((contender) => {
      const tally = tallies.get(contender.key)!;
      const server = contender.stepwise?.server;
      return {
        key: contender.key,
        name: contender.name,
        kind: contender.stepwise ? 'stepwise' : contender.bound ? 'bound' : 'peer',
        ...(contender.stepwise ? { chat: contender.stepwise.chat, streaming: contender.stepwise.streaming, store: contender.stepwise.store } : {}),
        ...(contender.bound ? { store: contender.bound.store } : {}),
        calls: tally.calls,
        perCallMs: median(tally.perCall),
        overheadP50Us: median(tally.overheadsUs),
        overheadP95Us: quantile(tally.overheadsUs, 0.95),
        ratio: median(tally.ratios),
        /** The framework's own process: for Stepwise, its WebSocket client. */
        cpuUsPerCall: tally.cpuUs / tally.callsTotal,
        rssMb: mb(tally.rss),
        ...requestCells(tally),
        ...(server
          ? {
              serverCpuUsPerCall: (tally.serverCpuMs * 1000) / tally.callsTotal,
              serverRssMb: mb(peakRss(server.pid)),
              serverRssNowMb: mb(currentRss(server.pid)),
              newChatMs: contender.stepwise?.chat === 'fresh' ? median(tally.prepareMs) : undefined,
            }
          : {}),
      };
    }),
  ];
  for (const contender of contenders) await contender.worker.exit();
  await floor.exit();
  for (const contender of contenders) await contender.stepwise?.server.stop();
  await model.stop();
  return { steps: settings.steps, rounds: settings.rounds, rewarmCalls: settings.rewarmCalls, rows };
}
