// Starts the server on a new data dir with a CPU profile of its start (node --cpu-prof), and
// prints how long it took to answer /api/health; five starts, so that the OS cache is warm.
// PROFILE_DIR=/tmp/prof node --import tsx bench/src/profile-start.ts
import { currentRss } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';

for (let start = 0; start < Number(process.env.STARTS ?? 5); start++) {
  const profiled = start === Number(process.env.STARTS ?? 5) - 1 && process.env.PROFILE_DIR;
  const server = await startStepwise('http://127.0.0.1:9/v1', {
    pollMs: 5,
    nodeArgs: profiled ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`, '--cpu-prof-interval=200'] : [],
  });
  console.log(
    `start ${start + 1}: ${server.startMs.toFixed(0)} ms to a healthy /api/health, RSS ${(currentRss(server.pid) / 2 ** 20).toFixed(0)} MB${profiled ? ' (profiled)' : ''}`,
  );
  await server.stop();
}
process.exit(0);
