// Drives Stepwise with the overhead task while its server writes a CPU profile (node --cpu-prof).
import { startModelServer, startStepwise, startWorker } from './processes.ts';
const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '20' });
const server = await startStepwise(model.url, process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}, ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`]);
const worker = await startWorker('stepwise', server.wsUrl);
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
times.sort((a, b) => a - b);
floors.sort((a, b) => a - b);
console.log('stepwise per call median ms', times[7]!.toFixed(3), 'floor', floors[7]!.toFixed(3));
await worker.exit();
await floor.exit();
await server.stop();
await model.stop();
process.exit(0);
