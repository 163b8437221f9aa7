// Two Stepwise servers of the same build, told apart only by their settings, measured round by round
// in turn against one model server: an A/B of a setting that the machine's drift cannot take sides in.
// A='{"SOCKET_BATCH_MS":"0"}' B='{"SOCKET_BATCH_MS":"10"}' [CHAT=growing] [ROUNDS=40] [WARMUP_CALLS=1500]
//   node --import tsx bench/src/ab-settings.ts
import { cpuMs, startModelServer, startWorker } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';
import { median } from './stats.ts';

const rounds = Number(process.env.ROUNDS ?? 40);
const warmupCalls = Number(process.env.WARMUP_CALLS ?? 1_500);
const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
const floor = await startWorker('floor', model.url);
const sides = [];
for (const name of ['A', 'B'] as const) {
  const env = JSON.parse(process.env[name] ?? '{}') as Record<string, string>;
  const server = await startStepwise(model.url, { env });
  const worker = await startWorker(process.env.CHAT === 'growing' ? 'stepwise-growing' : 'stepwise-fresh', server.wsUrl);
  sides.push({ name, env, server, worker, times: [] as number[], cpuUs: 0, calls: 0 });
}
for (const side of sides) for (let calls = 0; calls < warmupCalls; ) calls += (await side.worker.task(20)).calls;
for (let calls = 0; calls < warmupCalls; ) calls += (await floor.task(20)).calls;
const floors: number[] = [];
for (let i = 0; i < rounds; i++) {
  const f = await floor.task(20);
  floors.push(f.ms / f.calls);
  // Each round in the other order, so neither side always runs just after the floor.
  for (const side of i % 2 ? [...sides].reverse() : sides) {
    const before = cpuMs(side.server.pid);
    const r = await side.worker.task(20);
    side.cpuUs += (cpuMs(side.server.pid) - before) * 1000;
    side.times.push(r.ms / r.calls);
    side.calls += r.calls;
  }
}
const floorMs = median(floors);
console.log(`floor ${floorMs.toFixed(3)} ms per call`);
for (const side of sides) {
  const ms = median(side.times);
  console.log(
    `${side.name} ${JSON.stringify(side.env)}: ${ms.toFixed(3)} ms per call (${(ms / floorMs).toFixed(2)}× the floor), server CPU ${(side.cpuUs / side.calls).toFixed(0)} µs per call`,
  );
}
for (const side of sides) await side.server.stop();
await model.stop?.();
process.exit(0);
