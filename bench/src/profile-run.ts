// Drives Stepwise with the overhead task while its server writes a CPU profile (node --cpu-prof),
// then prints the measured window and the model calls in it, for profile-summary.ts.
// PROFILE_DIR=/tmp/prof [PROFILE_INTERVAL_US=200] [NODE_ARGS=--trace-gc] [EXTRA='{"DB_SYNC":"normal","LLM_STREAMING":"false"}'] [CHAT=growing] [ROUNDS=15]
//   node --import tsx bench/src/profile-run.ts
// Without PROFILE_DIR it only times the rounds (a quick A/B of two trees, not a substitute for `pnpm bench`).
// Then: node --import tsx bench/src/profile-summary.ts $PROFILE_DIR --from=… --to=… --calls=…
import { cpuMs, startModelServer, startWorker } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';
import { median } from './stats.ts';

const rounds = Number(process.env.ROUNDS ?? 15);
const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
const server = await startStepwise(model.url, {
  env: process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {},
  nodeArgs: [
    ...(process.env.PROFILE_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`, `--cpu-prof-interval=${process.env.PROFILE_INTERVAL_US ?? 200}`]
      : []),
    ...(process.env.NODE_ARGS?.split(' ').filter(Boolean) ?? []),
  ],
});
const worker = await startWorker(process.env.CHAT === 'growing' ? 'stepwise-growing' : 'stepwise-fresh', server.wsUrl);
const floor = await startWorker('floor', model.url);
// Both sides to their steady speed first (see settings.warmupCalls in settings.ts).
const WARMUP_CALLS = Number(process.env.WARMUP_CALLS ?? 3_000);
for (let calls = 0; calls < WARMUP_CALLS; ) calls += (await worker.task(20)).calls;
for (let calls = 0; calls < WARMUP_CALLS; ) calls += (await floor.task(20)).calls;
const times: number[] = [];
const floors: number[] = [];
let calls = 0;
let serverCpu = 0;
let floorCpuUs = 0;
let floorCalls = 0;
// The profile's timestamps are microseconds of the monotonic clock process.hrtime reads.
const clock = () => process.hrtime.bigint() / 1000n;
let from = 0n;
let to = 0n;
for (let i = 0; i < rounds; i++) {
  const f = await floor.task(20);
  floors.push(f.ms / f.calls);
  floorCpuUs += f.cpuUs;
  floorCalls += f.calls;
  const began = clock();
  const cpuBefore = cpuMs(server.pid);
  const r = await worker.task(20);
  serverCpu += cpuMs(server.pid) - cpuBefore;
  to = clock();
  if (i === 0) from = began;
  times.push(r.ms / r.calls);
  calls += r.calls;
}
console.log(
  `${server.store.label}: stepwise per call median ms ${median(times).toFixed(3)}, floor ${median(floors).toFixed(3)}, ratio of medians ${(median(times) / median(floors)).toFixed(2)}`,
);
const profiler = process.env.PROFILE_DIR ? ', profiler included' : '';
console.log(
  `server CPU per call ${((serverCpu * 1000) / calls).toFixed(0)} µs (from /proc${profiler}); floor client CPU per call ${(floorCpuUs / floorCalls).toFixed(0)} µs`,
);
// The window spans the floor's runs between Stepwise's too; the server is idle then, which the summary leaves out.
console.log(`profile-summary: --from=${from} --to=${to} --calls=${calls}`);
await worker.exit();
await floor.exit();
await server.stop();
await model.stop();
process.exit(0);
