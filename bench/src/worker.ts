// One framework in one warm process, driven over IPC by the benchmark runner.
import './guard.ts';
import { bareOpenAi, type Framework, langGraph, now, openAiAgents, stepwise, vercelAi } from './frameworks.ts';

export type WorkerCommand = { cmd: 'task'; steps: number } | { cmd: 'stop'; marker: string; stats: string } | { cmd: 'exit' };
export type WorkerReply =
  | { ok: true; ms: number; calls: number; rss: number }
  | { ok: true; stopAt: number; endedAt: number }
  | { ok: false; error: string };

const [name, target] = process.argv.slice(2) as [string, string];
const factories: Record<string, () => Framework | Promise<Framework>> = {
  floor: () => bareOpenAi(target),
  agents: () => openAiAgents(target),
  ai: () => vercelAi(target),
  langgraph: () => langGraph(target),
  stepwise: () => stepwise(target),
};
const framework = await factories[name]!();
let peakRss = process.memoryUsage().rss;

process.on('message', async (command: WorkerCommand) => {
  try {
    if (command.cmd === 'exit') {
      await framework.close();
      process.exit(0);
    }
    if (command.cmd === 'task') {
      const started = now();
      const calls = await framework.task(command.steps);
      const ms = now() - started;
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      process.send!({ ok: true, ms, calls, rss: peakRss } satisfies WorkerReply);
    } else {
      const { marker, stats } = command;
      const inFlight = async () => {
        for (;;) {
          const seen = (await (await fetch(`${stats}/received?marker=${encodeURIComponent(marker)}`)).json()) as { receivedAt?: number };
          if (seen.receivedAt) return;
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      };
      process.send!({ ok: true, ...(await framework.stop(marker, inFlight)) } satisfies WorkerReply);
    }
  } catch (error) {
    process.send!({ ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) } satisfies WorkerReply);
  }
});
process.send!({ ok: true, ms: 0, calls: 0, rss: peakRss } satisfies WorkerReply);
