import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** Renders the figures as Markdown tables; the reading of them is written by hand below the marker. */
export function report(results: any): string {
  const { machine, overhead, stop, concurrency, streaming } = results;
  const lines: string[] = [];
  lines.push('# Benchmark results', '');
  lines.push(
    `Run ${results.date}${results.quick ? ' (quick smoke run: small N, figures not meaningful)' : ''} on ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}.`,
    'Every framework talks to the same scripted OpenAI-compatible server (the tests\' fixture) in its own process on 127.0.0.1; each framework runs in one warm process of its own.',
    '',
  );
  if (overhead) {
  lines.push(`## 1. Overhead per model call (${overhead.steps} tool steps per task, ${overhead.rounds} interleaved rounds, zero model latency)`, '');
  lines.push('| framework | model calls per task | time per call (median) | overhead per call vs floor, p50 / p95 | ratio to floor (median) | peak RSS of its process |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const row of overhead.rows) {
    const rss = row.serverRssMb === undefined ? `${row.rssMb} MB` : `${row.serverRssMb} MB server + ${row.rssMb} MB client`;
    lines.push(`| ${row.name} | ${row.calls} | ${row.perCallMs.toFixed(3)} ms | ${Math.round(row.overheadP50Us)} µs / ${Math.round(row.overheadP95Us)} µs | ${row.ratio.toFixed(2)}× | ${rss} |`);
  }
  }
  if (stop) {
  lines.push('', `## 2. Stop latency (${stop.trials} stops each, during a 10 s model call)`, '');
  lines.push('| framework | to the end seen by the caller, p50 / p99 / max | to the upstream request closed, p50 / p99 / max |');
  lines.push('| --- | ---: | ---: |');
  for (const row of stop.rows) {
    const cell = (value: any) => `${value.p50} / ${value.p99} / ${value.max} ms`;
    lines.push(`| ${row.name} | ${cell(row.toEndMs)} | ${cell(row.toUpstreamCloseMs)} |`);
  }
  }
  if (concurrency) {
  lines.push('', '## 3. Concurrency (three-step runs, 250 ms per model call: 9 calls, 2.25 s ideal)', '');
  lines.push('| store | sessions | total time | ideal | lag model → client, p50 / p99 | server memory per idle session | server peak RSS | server CPU |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of concurrency.rows) {
    lines.push(`| ${row.store} | ${row.sessions} | ${(row.totalMs / 1000).toFixed(2)} s | ${(row.idealMs / 1000).toFixed(2)} s | ${row.lagP50Ms} / ${row.lagP99Ms} ms | ${row.idleRssPerSessionKb} KB | ${row.peakRssMb} MB | ${row.cpuPercent}% |`);
  }
  const largest = Object.entries(concurrency.largestUnder100ms).map(([store, n]) => `${store}: **${n || 'none of those measured'}**`).join('; ');
  lines.push('', `Largest N with p99 lag under 100 ms: ${largest}.`, '');
  }
  if (streaming) {
  lines.push(`## 4. Streaming relay (${streaming.tokens} tokens, as fast as the socket takes them)`, '');
  lines.push('| | |', '| --- | ---: |');
  lines.push(`| bare openai SDK stream, tokens per second | ${streaming.floorTokensPerSecond} |`);
  lines.push(`| Stepwise, tokens per second reaching the WebSocket client as \`assistant_delta\` | ${streaming.stepwiseTokensPerSecond} (${streaming.tokensAtClient} tokens in ${streaming.framesAtClient} frames) |`);
  lines.push(`| added time per token, Stepwise relay vs bare SDK | ${streaming.addedLatencyPerTokenUs} µs |`, '');
  }
  const reading = join(dirname(fileURLToPath(import.meta.url)), '..', 'READING.md');
  if (existsSync(reading)) lines.push(readFileSync(reading, 'utf8'));
  return `${lines.join('\n')}\n`;
}
