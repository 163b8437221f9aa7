// 1. Time and CPU per model call above bare openai SDK calls (the floor). Each contender is measured
// in blocks: its processes (Stepwise's server is a process of its own, its client another) and a
// floor of the block's own start new, make settings.warmupCalls model calls in turn, then run
// settings.rounds timed tasks back to back, each paired with a floor task just before it; then they
// stop. The ratio is taken within each pair, the median over pairs. Neither side of a pair ever
// idles, and both are as old: memory a process here has not touched for a minute is slow to touch
// again (see settings.warmupCalls), and a process that has run for minutes is faster than one warmed
// up for seconds. Every contender is measured in settings.overheadPasses blocks, every other pass in
// the reverse order, so that the machine's drift over a run falls on both ends of the order alike.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
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
  /** After its block: its store's writes to disk done now (see StoreSetup.settle). */
  settle?: () => Promise<void>;
  /**
   * What the row is: Stepwise, a peer framework, or not a framework: `bound`, the floor plus one
   * journal commit per call on `store`; `check`, the floor's own code in a new process (it should
   * read 1.00×); `streaming-floor`, the floor's loop with every reply streamed.
   */
  kind: 'stepwise' | 'peer' | 'bound' | 'check' | 'streaming-floor';
  stepwise?: { chat: StepwiseChat; streaming: boolean; store: string };
  /** The store of a `bound` row. */
  store?: string;
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
  /** Streamed chunks the model server sent. */
  chunks: number;
  rss: number;
  /** The median ratio of each block, in the order run. */
  blockRatios: number[];
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
  chunks: 0,
  rss: 0,
  blockRatios: [],
  serverRss: 0,
  serverRssNow: 0,
});

export async function overhead(settings: Settings, stores: Stores) {
  log(`1. overhead per model call: ${settings.steps} tool steps per task, ${settings.overheadPasses} block(s) of ${settings.rounds} timed pairs per contender`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: String(settings.steps) });
  const bodies = async () => (await (await fetch(`${model.stats}/bodies`)).json()) as { requests: number; bytes: number; maxBytes: number; chunks: number };
  const contenders: Contender[] = [];
  const addStepwise = (key: string, name: string, store: StoreSetup, chat: StepwiseChat, streaming: boolean) =>
    contenders.push({
      key,
      name,
      kind: 'stepwise',
      stepwise: { chat, streaming, store: store.label },
      settle: store.settle,
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
  const growingStore = stores.embeddedVariants[0]!;
  addStepwise('stepwise-growing', `Stepwise, streaming, ${growingStore.label}, one growing chat for every task`, growingStore, 'growing', true);
  // The bound each Stepwise row keeps the same promises as: the floor's own loop, every reply
  // streamed (as many chunks per call as Stepwise's) and committed to the same store before its
  // tool runs (see journaledFloor).
  for (const store of stepwiseStores) {
    const sync = store.key === 'embedded-full' ? 'full' : 'normal';
    const where = store.key === 'postgres' ? 'PostgreSQL' : `SQLite, synchronous=${sync}`;
    contenders.push({
      key: `bound-${store.key}`,
      name: `openai SDK calls, streaming, + one ${where} journal commit per call (not a framework)`,
      kind: 'bound',
      store: store.label,
      settle: store.settle,
      start: async () => ({
        worker:
          store.key === 'postgres'
            ? await startWorker('floor-streaming-journal-pg', model.url, (await store.env()).DATABASE_URL!)
            : await startWorker(sync === 'full' ? 'floor-streaming-journal-full' : 'floor-streaming-journal', model.url),
      }),
    });
  }
  // The method's own check: the floor's code in a new process of its own, measured as every contender is.
  contenders.push({
    key: 'floor-twin',
    name: "openai SDK calls in a new process, measured as a contender (the floor's own code: the method's check)",
    kind: 'check',
    start: async () => ({ worker: await startWorker('floor', model.url) }),
  });
  // What reading a stream costs the bare SDK: Stepwise streams by default, the floor does not.
  contenders.push({
    key: 'floor-streaming',
    name: "openai SDK calls with stream: true, the reply put together from its chunks (the floor's loop otherwise; not a framework)",
    kind: 'streaming-floor',
    start: async () => ({ worker: await startWorker('floor-streaming', model.url) }),
  });
  // The peers measured alike: each streams every reply and saves every step to SQLite (fair-peers.ts).
  for (const [key, name] of [
    ['agents-sqlite', 'OpenAI Agents SDK, streamed run, SQLite-backed session'],
    ['ai-sqlite', 'Vercel AI SDK, streamText, each step’s messages saved to SQLite'],
    ['langgraph-sqlite', 'LangGraph.js, streaming, its SQLite checkpointer'],
  ] as const) {
    contenders.push({ key, name, kind: 'peer', start: async () => ({ worker: await startWorker(key, model.url) }) });
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
    tally.chunks += sent.chunks ?? 0;
    tally.rss = Math.max(tally.rss, result.rss);
  };
  try {
    for (let pass = 0; pass < settings.overheadPasses; pass++) {
      for (const contender of pass % 2 === 0 ? contenders : [...contenders].reverse()) {
        const tally = tallies.get(contender.key)!;
        await block(contender, tally);
        log(`   ${contender.name}: ${tally.blockRatios.at(-1)!.toFixed(2)}× in this block, ${median(tally.ratios).toFixed(2)}× so far`);
      }
    }
  } finally {
    await model.stop();
  }

  /**
   * One block of a contender: its processes and a floor of the block's own start new (a process that
   * has run for minutes is faster than one warmed up for seconds: the floor's code in a new process
   * read 1.14× a floor that had run since the start), warm up in turn, run the timed pairs, stop.
   */
  async function block(contender: Contender, tally: Tally) {
    const floor = await startWorker('floor', model.url);
    const started = await contender.start().catch(async (error: unknown) => {
      await floor.exit();
      throw error;
    });
    const { worker, server } = started;
    try {
      await warmUp(contender, worker, floor);
      const ratios: number[] = [];
      for (let pair = 0; pair < settings.rounds; pair++) {
        const floorRun = await run(floor);
        const contenderRun = await run(worker, server);
        const floorPerCall = floorRun.result.ms / floorRun.result.calls;
        const perCall = contenderRun.result.ms / contenderRun.result.calls;
        add(floorTally, floorRun);
        add(tally, contenderRun);
        tally.overheadsUs.push((perCall - floorPerCall) * 1000);
        tally.ratios.push(perCall / floorPerCall);
        ratios.push(perCall / floorPerCall);
      }
      tally.blockRatios.push(median(ratios));
      if (server) {
        tally.serverRss = Math.max(tally.serverRss, peakRss(server.pid));
        tally.serverRssNow = currentRss(server.pid);
      }
    } finally {
      await Promise.allSettled([worker.exit(), floor.exit()]);
      await server?.stop();
      // What the block wrote goes to disk now, not during the next block (a PostgreSQL checkpoint
      // spreads its writes over minutes).
      await contender.settle?.();
      await promisify(execFile)('sync');
    }
  }

  /**
   * Both sides to their steady speed, in turn, each until it has made settings.warmupCalls model
   * calls (a side done first waits a second or two: too short to matter); the growing chat also until
   * its requests carry settings.growingChatKiB of history, or stop growing (the context budget caps
   * what a request carries). The contender's task comes last, just before the first timed pair.
   */
  async function warmUp(contender: Contender, worker: Worker, floor: Worker) {
    const target = settings.growingChatKiB * 1024;
    let grown = contender.stepwise?.chat !== 'growing';
    let largest = 0;
    let flat = 0;
    let floorLast = false;
    for (let calls = 0, floorCalls = 0; calls < settings.warmupCalls || floorCalls < settings.warmupCalls || !grown; ) {
      if (floorCalls < settings.warmupCalls) {
        floorCalls += (await floor.task(settings.steps)).calls;
        floorLast = true;
      }
      if (calls >= settings.warmupCalls && grown) continue;
      if (!grown) await bodies(); // forget the floor's requests
      calls += (await worker.task(settings.steps)).calls;
      floorLast = false;
      if (grown) continue;
      const { maxBytes } = await bodies();
      flat = maxBytes > largest ? 0 : flat + 1;
      largest = Math.max(largest, maxBytes);
      grown = largest >= target || flat >= 20;
      if (grown && largest < target) log(`   the growing chat stopped growing at ${Math.round(largest / 1024)} KiB`);
    }
    if (floorLast) await worker.task(settings.steps);
  }

  const requestCells = (tally: Tally) =>
    tally.requests
      ? { requestKbMean: tally.requestBytes / tally.requests / 1024, requestKbMax: tally.requestMaxBytes / 1024, chunksPerCall: tally.chunks / tally.requests }
      : {};
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
        kind: contender.kind,
        ...(contender.stepwise ? { chat: contender.stepwise.chat, streaming: contender.stepwise.streaming, store: contender.stepwise.store } : {}),
        ...(contender.store ? { store: contender.store } : {}),
        calls: tally.calls,
        perCallMs: median(tally.perCall),
        overheadP50Us: median(tally.overheadsUs),
        overheadP95Us: quantile(tally.overheadsUs, 0.95),
        ratio: median(tally.ratios),
        blockRatios: tally.blockRatios,
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
