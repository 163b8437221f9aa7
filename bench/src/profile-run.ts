// Drives Stepwise with the overhead task while its server writes a CPU profile (node --cpu-prof).
// PROFILE_DIR=/tmp/prof [EXTRA='{"DB_SYNC":"full"}'] [CHAT=growing] node --import tsx bench/src/profile-run.ts
import { startModelServer, startWorker } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';
import { median } from './stats.ts';

const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
const server = await startStepwise(model.url, {
  env: process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {},
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`],
});
const worker = await startWorker(process.env.CHAT === 'growing' ? 'stepwise-growing' : 'stepwise-fresh', server.wsUrl);
const floor = await startWorker('floor', model.url);
for (let i = 0; i < 3; i++) await worker.task(20);
const times: number[] = [];
const floors: number[] = [];
for (let i = 0; i < 15; i++) {
  const f = await floor.task(20);
  floors.push(f.ms / f.calls);
  const r = await worker.task(20);
  times.push(r.ms / r.calls);
}
console.log(`${server.store.label}: stepwise per call median ms ${median(times).toFixed(3)}, floor ${median(floors).toFixed(3)}`);
await worker.exit();
await floor.exit();
await server.stop();
await model.stop();
process.exit(0);
