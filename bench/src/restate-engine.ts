// 7. Restate engine: the overhead workload of section 1 (agent runs of N tool steps, zero model
// latency, a new chat per task) on two Stepwise servers that differ only in where runs execute:
// the default in-process engine, and RUN_ENGINE=restate against a throwaway restate-server (each
// run a Restate workflow served by the Stepwise process, every journal entry a ctx.run step).
// Both on the embedded store as the server's defaults run it, each on a DATA_DIR of its own. In
// each round both run once, in an order that alternates from round to round, each paired with a
// bare openai SDK run (the floor) just before it; the ratio restate / in-process is taken within
// each round, the median over rounds, so that the machine's drift falls on both sides alike.
import { readdirSync, readFileSync } from 'node:fs';
import { startTestRestate } from '../../scripts/restate.mjs';
import { cpuMs, freePort, peakRss, startModelServer, startWorker, type TaskResult, type Worker } from './processes.ts';
import { log, type Settings } from './settings.ts';
import { mb, median, quantile, round } from './stats.ts';
import { type StepwiseServer, startStepwise } from './stepwise-server.ts';
import type { Stores } from './stores.ts';

/** What the runs of one engine (or of the floor) add up to. */
interface Tally {
  perCall: number[];
  /** Its time per call over the floor run's just before it, per round. */
  ratios: number[];
  calls: number;
  callsTotal: number;
  serverCpuMs: number;
  restateCpuMs: number;
}

const emptyTally = (): Tally => ({ perCall: [], ratios: [], calls: 0, callsTotal: 0, serverCpuMs: 0, restateCpuMs: 0 });

interface Engine {
  key: 'in-process' | 'restate';
  name: string;
  server: StepwiseServer;
  worker: Worker;
}

export async function restateEngine(settings: Settings, stores: Stores) {
  log(`7. Restate engine: ${settings.steps} tool steps per task, ${settings.restateRounds} rounds, RUN_ENGINE=restate against the in-process engine`);
  // Stopped in reverse order however the section ends: the workers, the Stepwise servers (before
  // restate-server, so that none of them is left retrying it), restate-server, the model server.
  const stops: (() => Promise<void>)[] = [];
  try {
    const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: String(settings.steps) });
    stops.push(model.stop);
    const before = new Set(childPids('restate-server'));
    const restate = await startTestRestate();
    // restate-server runs in a process group of its own: the runner's exit hooks do not know it.
    process.once('exit', restate.stopNow);
    stops.push(async () => {
      await restate.stop();
      process.off('exit', restate.stopNow);
    });
    const restatePid = childPids('restate-server').find((pid) => !before.has(pid));
    const restateVersion = await fetch(`${restate.adminUrl}/version`)
      .then(async (response) => (response.ok ? String(((await response.json()) as { version?: unknown }).version ?? '') || undefined : undefined))
      .catch(() => undefined);

    const store = stores.embedded;
    const started = await Promise.allSettled([
      startStepwise(model.url, { env: { ...(await store.env()) } }),
      startStepwise(model.url, {
        env: {
          ...(await store.env()),
          RUN_ENGINE: 'restate',
          RESTATE_INGRESS_URL: restate.ingressUrl,
          RESTATE_ADMIN_URL: restate.adminUrl,
          RESTATE_SERVICE_PORT: String(await freePort()),
        },
      }),
    ]);
    for (const result of started) if (result.status === 'fulfilled') stops.push(result.value.stop);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    const [inProcessServer, restateServer] = started.map((result) => (result as PromiseFulfilledResult<StepwiseServer>).value) as [
      StepwiseServer,
      StepwiseServer,
    ];

    const floor = await startWorker('floor', model.url);
    stops.push(floor.exit);
    const engines: Engine[] = [];
    for (const [key, name, server] of [
      ['in-process', `Stepwise, in-process engine (the default), ${store.label}`, inProcessServer],
      ['restate', `Stepwise, RUN_ENGINE=restate, ${store.label}`, restateServer],
    ] as const) {
      const worker = await startWorker('stepwise-fresh', server.wsUrl);
      stops.push(worker.exit);
      engines.push({ key, name, server, worker });
    }

    // Not engines: the floor with one journal step per model call in restate-server (a ctx.run in a
    // Restate service), and with one SQLite commit per call. What a Restate journal step costs by
    // itself on this machine, whatever engine is built on it.
    const bounds = {
      'in-process': await startWorker('floor-journal', model.url),
      restate: await startWorker('floor-restate', model.url, restate.ingressUrl, restate.adminUrl),
    };
    for (const worker of Object.values(bounds)) stops.push(worker.exit);

    // Every process to its steady speed first, the floor too (see settings.warmupCalls).
    for (const worker of [floor, ...engines.map((engine) => engine.worker), ...Object.values(bounds)]) {
      for (let calls = 0; calls < settings.warmupCalls; ) calls += (await worker.task(settings.steps)).calls;
    }
    log(`   every process warmed up with ${settings.warmupCalls} model calls`);

    const floorTally = emptyTally();
    const tallies = new Map(engines.map((engine) => [engine.key, emptyTally()]));
    /** Per round: Restate's time per call over the in-process engine's, and the difference (µs). */
    const restateRatios: number[] = [];
    const addedUs: number[] = [];
    const boundPerCallMs = { 'in-process': [] as number[], restate: [] as number[] };
    /** Per round: the Restate floor's time per call minus the SQLite-journaled floor's (µs). */
    const boundAddedUs: number[] = [];
    const add = (tally: Tally, result: TaskResult, serverCpuMs = 0, restateCpuMs = 0) => {
      tally.perCall.push(result.ms / result.calls);
      tally.calls = result.calls;
      tally.callsTotal += result.calls;
      tally.serverCpuMs += serverCpuMs;
      tally.restateCpuMs += restateCpuMs;
    };
    for (let round = -settings.warmup; round < settings.restateRounds; round++) {
      const order = round % 2 === 0 ? engines : [...engines].reverse();
      const perCall = new Map<string, number>();
      for (const engine of order) {
        const floorRun = await floor.task(settings.steps);
        const serverCpu = cpuMs(engine.server.pid);
        const restateCpu = restatePid ? cpuMs(restatePid) : 0;
        const run = await engine.worker.task(settings.steps);
        const serverCpuMs = cpuMs(engine.server.pid) - serverCpu;
        const restateCpuMs = restatePid ? cpuMs(restatePid) - restateCpu : 0;
        if (round < 0) continue;
        add(floorTally, floorRun);
        const tally = tallies.get(engine.key)!;
        add(tally, run, serverCpuMs, restateCpuMs);
        tally.ratios.push(run.ms / run.calls / (floorRun.ms / floorRun.calls));
        perCall.set(engine.key, run.ms / run.calls);
      }
      const boundPerCall = new Map<string, number>();
      for (const key of round % 2 === 0 ? (['in-process', 'restate'] as const) : (['restate', 'in-process'] as const)) {
        const bound = await bounds[key].task(settings.steps);
        boundPerCall.set(key, bound.ms / bound.calls);
      }
      if (round < 0) continue;
      restateRatios.push(perCall.get('restate')! / perCall.get('in-process')!);
      addedUs.push((perCall.get('restate')! - perCall.get('in-process')!) * 1000);
      boundPerCallMs.restate.push(boundPerCall.get('restate')!);
      boundPerCallMs['in-process'].push(boundPerCall.get('in-process')!);
      boundAddedUs.push((boundPerCall.get('restate')! - boundPerCall.get('in-process')!) * 1000);
    }

    const journalSteps = await ctxRunsPerRun(restate.adminUrl);
    const restateTally = tallies.get('restate')!;
    const stepsPerCall = journalSteps === undefined ? undefined : journalSteps / restateTally.calls;
    const rows = [
      {
        key: 'floor',
        name: 'openai SDK calls (floor)',
        calls: floorTally.calls,
        perCallMs: median(floorTally.perCall),
        perCallP95Ms: quantile(floorTally.perCall, 0.95),
        ratioToFloor: 1,
      },
      ...engines.map((engine) => {
        const tally = tallies.get(engine.key)!;
        return {
          key: engine.key,
          name: engine.name,
          calls: tally.calls,
          perCallMs: median(tally.perCall),
          perCallP95Ms: quantile(tally.perCall, 0.95),
          ratioToInProcess: engine.key === 'restate' ? median(restateRatios) : 1,
          ratioToFloor: median(tally.ratios),
          serverCpuUsPerCall: (tally.serverCpuMs * 1000) / tally.callsTotal,
          serverRssMb: mb(peakRss(engine.server.pid)),
          ...(engine.key === 'restate'
            ? {
                restateCpuUsPerCall: restatePid ? (tally.restateCpuMs * 1000) / tally.callsTotal : undefined,
                restateRssMb: restatePid ? mb(peakRss(restatePid)) : undefined,
                journalStepsPerRun: journalSteps,
                journalStepsPerCall: stepsPerCall === undefined ? undefined : round(stepsPerCall, 2),
              }
            : {}),
        };
      }),
    ];
    const added = { p50Us: round(median(addedUs), 0), p95Us: round(quantile(addedUs, 0.95), 0) };
    const bound = {
      inProcessPerCallMs: round(median(boundPerCallMs['in-process']), 3),
      restatePerCallMs: round(median(boundPerCallMs.restate), 3),
      addedP50Us: round(median(boundAddedUs), 0),
    };
    for (const row of rows) log(`   ${JSON.stringify(row)}`);
    log(
      `   restate adds ${added.p50Us} µs per model call (p50; p95 ${added.p95Us} µs); a Restate step by itself ${bound.addedP50Us} µs (${JSON.stringify(bound)})`,
    );
    return {
      steps: settings.steps,
      rounds: settings.restateRounds,
      store: store.label,
      restateVersion,
      rows,
      addedPerCallUs: added,
      /**
       * The floor with one Restate ctx.run step per model call against the floor with one SQLite commit
       * per call: what a Restate journal step per call costs by itself, for any engine that makes one.
       */
      bound,
      /** The added time spread over the journal steps of a call: what each ctx.run step costs, the run's start included. */
      addedPerJournalStepUs: stepsPerCall ? round(added.p50Us / stepsPerCall, 0) : undefined,
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => log(`   could not stop a process: ${String(error)}`));
  }
}

/**
 * The ctx.run steps (Restate journal commands "Run", named "journal" as Stepwise's are; the Restate
 * floor names its steps otherwise) of one run's workflow, the median over the
 * runs restate-server still holds, from its admin API's SQL view of the journals; undefined when
 * the query is not answered.
 */
async function ctxRunsPerRun(adminUrl: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${adminUrl}/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: "SELECT id, count(*) AS steps FROM sys_journal WHERE entry_type = 'Command: Run' AND name = 'journal' GROUP BY id" }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return undefined;
    const { rows } = (await response.json()) as { rows?: { steps?: number }[] };
    const steps = (rows ?? []).map((row) => Number(row.steps)).filter((value) => Number.isFinite(value) && value > 0);
    return steps.length ? median(steps) : undefined;
  } catch {
    return undefined;
  }
}

/** The processes named `name` (as /proc/PID/stat has it) whose parent is this process. */
function childPids(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === name && parent === process.pid) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}
