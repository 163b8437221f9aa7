// 0. What a server costs before any load: the time from spawning it on a new, empty DATA_DIR to
// the first 200 from /api/health (started as `pnpm start` starts it: Node running the compiled
// server, backend/dist/main.js, with source maps; files in the OS cache), and its
// resident memory once it has served one chat and settled. Several starts per store, medians.
import { currentRss, startModelServer } from './processes.ts';
import { log, type Settings, sleep } from './settings.ts';
import { startStepwise } from './stepwise-server.ts';
import { mb, median, round } from './stats.ts';
import type { Stores } from './stores.ts';
import { warmUpChat } from './ws-client.ts';

export async function footprint(settings: Settings, stores: Stores) {
  log(`0. cold start and idle memory: ${settings.starts} start${settings.starts === 1 ? '' : 's'} per store`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '3' });
  const rows = [];
  for (const store of [stores.embedded, ...(stores.postgres ? [stores.postgres] : [])]) {
    const startsMs: number[] = [];
    const idleRss: number[] = [];
    for (let start = 0; start < settings.starts; start++) {
      const env = await store.env(); // PostgreSQL: a new, empty database, made before the clock starts
      const server = await startStepwise(model.url, { env, pollMs: 5 });
      startsMs.push(server.startMs);
      await warmUpChat(server.wsUrl);
      await sleep(settings.settleMs);
      idleRss.push(currentRss(server.pid));
      await server.stop();
    }
    rows.push({
      store: store.label,
      starts: settings.starts,
      coldStartMs: round(median(startsMs), 0),
      coldStartMinMs: round(Math.min(...startsMs), 0),
      coldStartMaxMs: round(Math.max(...startsMs), 0),
      idleRssMb: mb(median(idleRss)),
    });
    log(`   ${JSON.stringify(rows.at(-1))}`);
  }
  await model.stop();
  return { settleMs: settings.settleMs, rows };
}
