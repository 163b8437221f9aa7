// Profiles the Stepwise server (node --cpu-prof) under N concurrent three-step runs.
// N=300 PROFILE_DIR=/tmp/prof [STORE=postgres] node --import tsx bench/src/profile-concurrency.ts
import WebSocket from 'ws';
import { startBenchPostgres } from './postgres.ts';
import { startModelServer } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';

const n = Number(process.env.N ?? 200);
const postgres = process.env.STORE === 'postgres' ? await startBenchPostgres() : undefined;
const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '3', BENCH_LATENCY_MS: '250' });
const server = await startStepwise(model.url, {
  env: postgres ? { DATABASE_URL: await postgres.newDatabase() } : {},
  nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_DIR}`],
});
const sockets = await Promise.all(
  Array.from(
    { length: n },
    () =>
      new Promise<WebSocket>((resolve) => {
        const socket = new WebSocket(server.wsUrl);
        socket.on('message', (data) => {
          if (String(data).includes('"type":"session"')) resolve(socket);
        });
      }),
  ),
);
const started = performance.now();
await Promise.all(
  sockets.map(
    (socket) =>
      new Promise<void>((resolve) => {
        socket.on('message', (data) => {
          if (String(data).includes('"type":"response_complete"')) resolve();
        });
        socket.send(JSON.stringify({ type: 'chat', content: 'Count', agent_mode: true, agent_max_steps: 3 }));
      }),
  ),
);
console.log('total ms', Math.round(performance.now() - started));
for (const socket of sockets) socket.close();
await server.stop();
await model.stop();
await postgres?.stop();
process.exit(0);
