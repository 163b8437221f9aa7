// One framework in one warm process, driven over IPC by the benchmark runner.
import './guard.ts';
import {
  bareLockstep,
  bareOpenAi,
  streamedOpenAi,
  journaledFloor,
  journaledFloorPg,
  restateFloor,
  type Framework,
  type LockstepClient,
  langGraph,
  now,
  openAiAgents,
  stepwise,
  vercelAi,
} from './frameworks.ts';
import { langGraphSqlite, openAiAgentsSqlite, vercelAiSqlite } from './fair-peers.ts';

export type WorkerCommand =
  | { cmd: 'task'; steps: number }
  | { cmd: 'stop'; marker: string; stats: string }
  | { cmd: 'lockstep'; sessions: number; calls: number; how: LockstepClient }
  | { cmd: 'exit' };
export type WorkerReply =
  | { ok: true; ms: number; calls: number; rss: number; cpuUs: number; prepareMs: number }
  | { ok: true; stopAt: number; endedAt: number }
  | { ok: true; totalMs: number; lags: number[]; failedCalls: number; rss: number; cpuUs: number }
  | { ok: false; error: string };

const [name, target, ...extra] = process.argv.slice(2) as [string, string, ...string[]];
const factories: Record<string, () => Framework | Promise<Framework>> = {
  floor: () => bareOpenAi(target),
  'floor-streaming': () => streamedOpenAi(target),
  'floor-journal': () => journaledFloor(target),
  'floor-journal-full': () => journaledFloor(target, 'full'),
  'floor-journal-pg': () => journaledFloorPg(target, extra[0]!),
  'floor-streaming-journal': () => journaledFloor(target, 'normal', true),
  'floor-streaming-journal-full': () => journaledFloor(target, 'full', true),
  'floor-streaming-journal-pg': () => journaledFloorPg(target, extra[0]!, true),
  'agents-sqlite': () => openAiAgentsSqlite(target),
  'ai-sqlite': () => vercelAiSqlite(target),
  'langgraph-sqlite': () => langGraphSqlite(target),
  'floor-restate': () => restateFloor(target, extra[0]!, extra[1]!),
  agents: () => openAiAgents(target),
  ai: () => vercelAi(target),
  langgraph: () => langGraph(target),
  'stepwise-fresh': () => stepwise(target, 'fresh'),
  'stepwise-growing': () => stepwise(target, 'growing'),
};
const framework = await factories[name]!();
let peakRss = process.memoryUsage().rss;
const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

process.on('message', async (command: WorkerCommand) => {
  try {
    switch (command.cmd) {
      case 'exit':
        await framework.close();
        process.exit(0);
        break;
      case 'task': {
        const prepared = now();
        await framework.prepare?.();
        const prepareMs = now() - prepared;
        const cpu = process.cpuUsage();
        const started = now();
        const calls = await framework.task(command.steps);
        const ms = now() - started;
        const used = cpuUs(cpu);
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
        process.send!({ ok: true, ms, calls, rss: peakRss, cpuUs: used, prepareMs } satisfies WorkerReply);
        break;
      }
      case 'lockstep': {
        const cpu = process.cpuUsage();
        const { totalMs, lags, failedCalls } = await bareLockstep(target, command.sessions, command.calls, command.how);
        const used = cpuUs(cpu);
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
        process.send!({ ok: true, totalMs, lags, failedCalls, rss: peakRss, cpuUs: used } satisfies WorkerReply);
        break;
      }
      case 'stop': {
        const { marker, stats } = command;
        await framework.prepare?.();
        const inFlight = async () => {
          for (;;) {
            const seen = (await (await fetch(`${stats}/received?marker=${encodeURIComponent(marker)}`)).json()) as { receivedAt?: number };
            if (seen.receivedAt) return;
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        };
        process.send!({ ok: true, ...(await framework.stop(marker, inFlight)) } satisfies WorkerReply);
        break;
      }
      default: {
        const unknown: never = command;
        throw new Error(`unknown command ${JSON.stringify(unknown)}`);
      }
    }
  } catch (error) {
    process.send!({ ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) } satisfies WorkerReply);
  }
});
process.send!({ ok: true, ms: 0, calls: 0, rss: peakRss, cpuUs: 0, prepareMs: 0 } satisfies WorkerReply);
