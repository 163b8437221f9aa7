// 2. Stop latency during a 10 s model call: to the end seen by the caller, and to the upstream close.
import { startModelServer, startWorker } from './processes.ts';
import { log, type Settings, sleep } from './settings.ts';
import { median, quantile, round } from './stats.ts';
import { startStepwise } from './stepwise-server.ts';
import type { Stores } from './stores.ts';

export async function stopLatency(settings: Settings, stores: Stores) {
  log(`2. stop latency: ${settings.stopTrials} stops per framework during a 10 s model call`);
  const model = await startModelServer({ BENCH_MODE: 'slow' });
  const server = await startStepwise(model.url, { env: await stores.embedded.env() });
  const targets = [
    { key: 'stepwise', name: `Stepwise (stop message → agent_stopped), ${stores.embedded.label}`, worker: await startWorker('stepwise-fresh', server.wsUrl) },
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
        if (closedAt === null) await sleep(25);
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
