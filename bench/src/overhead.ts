// 1. Time and CPU per model call above bare openai SDK calls (the floor). Each contender is measured
// in blocks: its processes (Stepwise's server is a process of its own, its client another) and a
// floor of the block's own start new, make settings.warmupCalls model calls in turn, then run
// settings.rounds timed tasks back to back, each paired with a floor task just before it; then they
// stop. The ratio is taken within each pair, the median over pairs. Neither side of a pair ever
// idles, and both are as old: memory a process here has not touched for a minute is slow to touch
// again (see settings.warmupCalls), and a process that has run for minutes is faster than one warmed
// up for seconds. Every contender is measured in settings.overheadPasses blocks, the second pass in
// the reverse order, so that the machine's drift over a run falls on both ends of the order alike.
import type { StepwiseChat } from './frameworks.ts';
import { cpuMs, currentRss, peakRss, startModelServer, startWorker, type TaskResult, type Worker } from './processes.ts';
import { log, type Settings } from './settings.ts';
import { mb, median, quantile } from './stats.ts';
import { startStepwise, type StepwiseServer } from './stepwise-server.ts';
import type { StoreSetup, Stores } from './stores.ts';

interface Contender {
  key: string;
  name: string;
  /** Starts the contender's processes, new for each block. */
  start: () => Promise<{ worker: Worker; server?: StepwiseServer }>;
  stepwise?: { chat: StepwiseChat; streaming: boolean; store: string };
  /** Not a framework: the floor plus one journal commit per call on this store. */
  bound?: { store: string };
  /** Not a framework: the floor's own code in a new process, measured as a contender (it should read 1.00×). */
  check?: true;
  /** Not a framework: the floor's loop with every reply streamed. */
  streamingFloor?: true;
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
  serverRss: number;
  serverRssNow: number;
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
  serverRss: 0,
  serverRssNow: 0,
});

export async function overhead(settings: Settings, stores: Stores) {
  log(`1. overhead per model call: ${settings.steps} tool steps per task, ${settings.overheadPasses} block(s) of ${settings.rounds} timed pairs per contender`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: String(settings.steps) });
  const bodies = async () => (await (await fetch(`${model.stats}/bodies`)).json()) as { requests: number; bytes: number; maxBytes: number };
  const contenders: Contender[] = [];
  const addStepwise = (key: string, name: string, store: StoreSetup, chat: StepwiseChat, streaming: boolean) =>
    contenders.push({
      key,
      name,
      stepwise: { chat, streaming, store: store.label },
      async start() {
        const server = await startStepwise(model.url, { env: { ...(await store.env()), ...(streaming ? {} : { LLM_STREAMING: 'false' }) } });
        try {
          return { server, worker: await startWorker(`stepwise-${chat}`, server.wsUrl) };
        } catch (error) {
          await server.stop();
          throw error;
        }
      },
    });
  const stepwiseStores = [...stores.embeddedVariants, ...(stores.postgres ? [stores.postgres] : [])];
  for (const store of stepwiseStores) addStepwise(`stepwise-${store.key}`, `Stepwise, streaming (the default), ${store.label}`, store, 'fresh', true);
  for (const store of stores.embeddedVariants)
    addStepwise(`stepwise-plain-${store.key}`, `Stepwise, LLM_STREAMING=false, ${store.label}`, store, 'fresh', false);
  const growingStore = stores.embeddedVariants[0]!;
  addStepwise('stepwise-growing', `Stepwise, streaming, ${growingStore.label}, one growing chat for every task`, growingStore, 'growing', true);
  // What one journal commit per model call costs by itself on each store: the floor's own loop with
  // each reply committed before its tool runs (see journaledFloor).
  for (const store of stepwiseStores) {
    const sync = store.key === 'embedded-full' ? 'full' : 'normal';
    const where = store.key === 'postgres' ? 'PostgreSQL' : `SQLite, synchronous=${sync}`;
    contenders.push({
      key: `bound-${store.key}`,
      name: `openai SDK calls + one ${where} journal commit per call (not a framework)`,
      bound: { store: store.label },
      start: async () => ({
        worker:
          store.key === 'postgres'
            ? await startWorker('floor-journal-pg', model.url, (await store.env()).DATABASE_URL!)
            : await startWorker(sync === 'full' ? 'floor-journal-full' : 'floor-journal', model.url),
      }),
    });
  }
  // The method's own check: the floor's code in a new process of its own, measured as every contender is.
  contenders.push({
    key: 'floor-twin',
    name: "openai SDK calls in a new process, measured as a contender (the floor's own code: the method's check)",
    check: true,
    start: async () => ({ worker: await startWorker('floor', model.url) }),
  });
  // What reading a stream costs the bare SDK: Stepwise streams by default, the floor does not.
  contenders.push({
    key: 'floor-streaming',
    name: "openai SDK calls with stream: true, the reply put together from its chunks (the floor's loop otherwise; not a framework)",
    streamingFloor: true,
    start: async () => ({ worker: await startWorker('floor-streaming', model.url) }),
  });
  for (const [key, name] of [
    ['agents', 'OpenAI Agents SDK'],
    ['ai', 'Vercel AI SDK'],
    ['langgraph', 'LangGraph.js'],
  ] as const) {
    contenders.push({ key, name, start: async () => ({ worker: await startWorker(key, model.url) }) });
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
    tally.rss = Math.max(tally.rss, result.rss);
  };
  for (let pass = 0; pass < settings.overheadPasses; pass++) {
    for (const contender of pass % 2 === 0 ? contenders : [...contenders].reverse()) {
      // A floor of the block's own, as new as the contender: a process that has run for minutes is
      // faster than one warmed up for seconds (the floor's code in a new process read 1.14× a floor
      // that had run since the start).
      const floor = await startWorker('floor', model.url);
      const { worker, server } = await contender.start().catch(async (error: unknown) => {
        await floor.exit();
        throw error;
      });
      try {
        // Both to their steady speed, in turn, so that neither idles while the other warms up; the
        // growing chat also until its requests carry settings.growingChatKiB of history.
        const growing = contender.stepwise?.chat === 'growing';
        for (let calls = 0, floorCalls = 0, grown = !growing; calls < settings.warmupCalls || floorCalls < settings.warmupCalls || !grown; ) {
          calls += (await worker.task(settings.steps)).calls;
          if (!grown) grown = (await bodies()).maxBytes >= settings.growingChatKiB * 1024;
          floorCalls += (await floor.task(settings.steps)).calls;
        }
        const tally = tallies.get(contender.key)!;
        for (let pair = 0; pair < settings.rounds; pair++) {
          const floorRun = await run(floor);
          const contenderRun = await run(worker, server);
          const floorPerCall = floorRun.result.ms / floorRun.result.calls;
          const perCall = contenderRun.result.ms / contenderRun.result.calls;
          add(floorTally, floorRun);
          add(tally, contenderRun);
          tally.overheadsUs.push((perCall - floorPerCall) * 1000);
          tally.ratios.push(perCall / floorPerCall);
        }
        if (server) {
          tally.serverRss = Math.max(tally.serverRss, peakRss(server.pid));
          tally.serverRssNow = currentRss(server.pid);
        }
        log(`   ${contender.name}: ${median(tally.ratios).toFixed(2)}× so far`);
      } finally {
        await worker.exit();
        await floor.exit();
        await server?.stop();
      }
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
      return {
        key: contender.key,
        name: contender.name,
        kind: contender.stepwise ? 'stepwise' : contender.bound ? 'bound' : contender.check ? 'check' : contender.streamingFloor ? 'streaming-floor' : 'peer',
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
        ...(contender.stepwise
          ? {
              serverCpuUsPerCall: (tally.serverCpuMs * 1000) / tally.callsTotal,
              serverRssMb: mb(tally.serverRss),
              serverRssNowMb: mb(tally.serverRssNow),
              newChatMs: contender.stepwise?.chat === 'fresh' ? median(tally.prepareMs) : undefined,
            }
          : {}),
      };
    }),
  ];
  await model.stop();
  return {
    steps: settings.steps,
    rounds: settings.rounds,
    passes: settings.overheadPasses,
    warmupCalls: settings.warmupCalls,
    growingChatKiB: settings.growingChatKiB,
    method: 'blocks',
    rows,
  };
}
