// 8. Scale on one machine: (a) idle signed-in sockets: the server's RSS growth for N sockets, each
// signed in as one of N/10 users (AUTH_MODE=header), and its CPU while they sit idle; (b) stored
// chats: the chat list and opening a chat among N stored chats (p50/p99), on SQLite and
// PostgreSQL; (c) agent runs per second per core at saturation, with the share of the server's
// CPU by part from a CPU profile (node --cpu-prof) of the saturated window.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoggedEvent } from '@stepwise/shared-types';
import WebSocket from 'ws';
import { PostgresDatabase } from '../../backend/src/store/postgres-database.ts';
import { openEmbeddedStore, openSqlStore } from '../../backend/src/store/open-store.ts';
import type { Store } from '../../backend/src/store/store.ts';
import { cpuMs, currentRss, root, startModelServer } from './processes.ts';
import { log, now, type Settings, sleep } from './settings.ts';
import { mb, quantile, round } from './stats.ts';
import { startStepwise } from './stepwise-server.ts';
import type { Stores } from './stores.ts';
import { AGENT_RUN, openClient } from './ws-client.ts';

export async function scale(settings: Settings, stores: Stores) {
  log(`8. scale: ${settings.scaleSockets} idle signed-in sockets, ${settings.scaleChats} stored chats, runs at saturation for ${settings.scaleSeconds} s`);
  const model = await startModelServer({ BENCH_MODE: 'task', BENCH_STEPS: '3' });
  try {
    // One part's failure must not lose the others' figures: it is reported instead.
    const failed: Record<string, string> = {};
    const part = async <T>(name: string, measure: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await measure();
      } catch (error) {
        failed[name] = error instanceof Error ? error.message : String(error);
        log(`   ${name} failed: ${failed[name]}`);
        return undefined;
      }
    };
    return {
      idleSockets: await part('idle sockets', () => idleSockets(settings, model.url)),
      storedChats: await part('stored chats', () => storedChats(settings, stores, model.url)),
      saturation: await part('saturation', () => saturation(settings, model.url)),
      failed,
    };
  } finally {
    await model.stop();
  }
}

/** Opens a socket signed in as `user` (the auth proxy's header); resolves once the server has sent `session`. */
function signedInSocket(wsUrl: string, user: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, { headers: { 'x-forwarded-user': user } });
    socket.on('message', (data) => {
      if ((JSON.parse(data.toString()) as { type: string }).type === 'session') resolve(socket);
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`socket refused: HTTP ${response.statusCode}`)));
  });
}

async function idleSockets(settings: Settings, modelUrl: string) {
  const server = await startStepwise(modelUrl, { env: { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1' } });
  const sockets: WebSocket[] = [];
  try {
    // One socket first, so that what a first connection loads is not counted as the sockets' cost.
    const first = await signedInSocket(server.wsUrl, 'warm-up');
    first.close();
    await sleep(settings.settleMs);
    const rssBefore = currentRss(server.pid);
    const opening = now();
    for (let index = 0; index < settings.scaleSockets; index += 50) {
      const batch = Array.from({ length: Math.min(50, settings.scaleSockets - index) }, (_, offset) =>
        signedInSocket(server.wsUrl, `user-${(index + offset) % Math.max(1, settings.scaleSockets / 10)}`),
      );
      sockets.push(...(await Promise.all(batch)));
    }
    const openMs = now() - opening;
    await sleep(settings.settleMs);
    const rssAfter = currentRss(server.pid);
    const cpuBefore = cpuMs(server.pid);
    await sleep(settings.scaleIdleMs);
    const idleCpuMs = cpuMs(server.pid) - cpuBefore;
    log(`   ${sockets.length} idle sockets: RSS ${mb(rssBefore)} → ${mb(rssAfter)} MB; CPU ${idleCpuMs} ms in ${settings.scaleIdleMs / 1000} s idle`);
    return {
      sockets: sockets.length,
      users: Math.max(1, settings.scaleSockets / 10),
      openMs: round(openMs, 0),
      rssBeforeMb: mb(rssBefore),
      rssAfterMb: mb(rssAfter),
      rssGrowthMb: round(mb(rssAfter) - mb(rssBefore), 1),
      idleSeconds: settings.scaleIdleMs / 1000,
      idleCpuMs,
      idleCpuPercent: round((idleCpuMs / settings.scaleIdleMs) * 100, 2),
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    await server.stop();
  }
}

/** A chat as a short exchange leaves it: a user message and an answer, as events and as messages. */
async function storeChat(store: Store, id: string, index: number): Promise<void> {
  await store.createSession(id);
  const ts = new Date().toISOString();
  const question = `Question ${index}: what is ${index} plus one?`;
  const answer = `It is ${index + 1}.`;
  await store.appendEvent(id, { type: 'user_message', content: question, seq: 1, ts } as unknown as LoggedEvent);
  await store.appendEvent(id, { type: 'assistant_message', content: answer, seq: 2, ts } as unknown as LoggedEvent);
  await store.appendMessages(
    id,
    [
      { role: 'user', content: question },
      { role: 'assistant', content: answer },
    ] as never,
    2,
  );
}

/** Fills a store with `count` chats, a few at a time; returns their ids. */
async function fill(store: Store, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  for (let index = 0; index < count; index += 20) await Promise.all(ids.slice(index, index + 20).map((id, offset) => storeChat(store, id, index + offset)));
  return ids;
}

/** p50 and p99 of `requests` GETs of the paths `path` gives, one after another. */
async function timeGets(url: string, requests: number, path: (index: number) => string) {
  const times: number[] = [];
  for (let index = 0; index < requests; index++) {
    const started = now();
    const response = await fetch(`${url}${path(index)}`);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`GET ${path(index)}: HTTP ${response.status}`);
    times.push(now() - started);
  }
  return { p50Ms: round(quantile(times, 0.5), 2), p99Ms: round(quantile(times, 0.99), 2) };
}

async function storedChats(settings: Settings, stores: Stores, modelUrl: string) {
  const rows = [];
  const kinds = [{ key: 'sqlite', label: 'SQLite (default DB_SYNC)' }, ...(stores.postgres ? [{ key: 'postgres', label: 'PostgreSQL' }] : [])];
  for (const kind of kinds) {
    const base = mkdtempSync(join(tmpdir(), 'stepwise-bench-chats-'));
    const dataDir = join(base, 'data');
    mkdirSync(dataDir);
    try {
      const env: Record<string, string> = { DATA_DIR: dataDir };
      let store: Store;
      if (kind.key === 'postgres') {
        env.DATABASE_URL = (await stores.postgres!.env()).DATABASE_URL!;
        store = await openSqlStore(new PostgresDatabase(env.DATABASE_URL));
      } else {
        store = await openEmbeddedStore(dataDir);
      }
      const filling = now();
      const ids = await fill(store, settings.scaleChats);
      await store.close();
      const fillSeconds = round((now() - filling) / 1000, 1);
      const server = await startStepwise(modelUrl, { env });
      try {
        // Warm-up, not counted.
        await timeGets(server.url, 20, (index) => (index % 2 ? '/api/sessions' : `/api/sessions/${ids[index]}`));
        const list = await timeGets(server.url, settings.scaleRequests, () => '/api/sessions');
        const open = await timeGets(server.url, settings.scaleRequests, (index) => `/api/sessions/${ids[(index * 7919) % ids.length]}`);
        log(`   ${ids.length} chats on ${kind.label}: list p99 ${list.p99Ms} ms, open p99 ${open.p99Ms} ms (filled in ${fillSeconds} s)`);
        rows.push({ store: kind.label, chats: ids.length, fillSeconds, list, open });
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  }
  return { requests: settings.scaleRequests, rows };
}

/**
 * The part of the server a profile frame's code belongs to. Stepwise's own code runs compiled into
 * one file (backend/dist/server.js); its source map gives each frame's TypeScript file, so its
 * store, model client and socket code count with the store, the SDK and the socket.
 */
function partOf(url: string, functionName: string, source: string | undefined): string | undefined {
  if (!url) return functionName === '(garbage collector)' ? 'garbage collector' : functionName === '(program)' ? 'V8 / native, no JS frame' : undefined;
  const where = source ?? url;
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(libsql|kysely|pg|pg-[a-z-]+)\//.test(where) || /backend\/src\/store\//.test(where))
    return 'store (libsql, Kysely, pg, Stepwise’s store code)';
  if (
    /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?openai\//.test(where) ||
    where.startsWith('node:internal/deps/undici') ||
    where.startsWith('node:internal/webstreams') ||
    /backend\/src\/llm\//.test(where)
  )
    return 'model SDK and HTTP client (openai, undici, web streams, Stepwise’s model client)';
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(ws|@fastify\/websocket)\//.test(where) || /backend\/src\/transport\//.test(where))
    return 'socket and HTTP server (ws, Stepwise’s transport code)';
  if (/backend\/src\/|shared-types\/src\/|backend\/dist\//.test(where)) return 'Stepwise’s own code (agent, chat, prompts, events)';
  if (where.includes('node_modules')) return 'other packages (fastify, pino, zod, handlebars, …)';
  return 'Node.js internals';
}

/** Maps a frame of the compiled server to its TypeScript file, through server.js's source map. */
function sourceFinder(): (url: string, line: number, column: number) => string | undefined {
  const mapFile = join(root, 'backend', 'dist', 'server.js.map');
  if (!existsSync(mapFile)) return () => undefined;
  const map = new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')));
  return (url, line, column) => {
    if (!url.endsWith('/backend/dist/server.js')) return undefined;
    const entry = map.findEntry(line, column) as { originalSource?: string };
    return entry.originalSource;
  };
}

/** The server's CPU in [from, to] (µs of the monotonic clock) by part, from its profile: each sample by its leaf frame, native code counted with its caller. */
function cpuByPart(dir: string, from: number, to: number): { part: string; share: number }[] {
  const file = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))[0];
  if (!file) return [];
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { url: string; functionName: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const source = sourceFinder();
  const parts = new Map<string, number>();
  let busy = 0;
  let time = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    time += profile.timeDeltas[index]!;
    const weight = profile.timeDeltas[index + 1] ?? 0;
    if (time < from || time > to) continue;
    let part: string | undefined;
    for (let id: number | undefined = profile.samples[index]!; id !== undefined && part === undefined; id = parent.get(id)) {
      const { url, functionName, lineNumber, columnNumber } = byId.get(id)!.callFrame;
      if (functionName === '(idle)') part = 'idle';
      else part = partOf(url, functionName, source(url, lineNumber, columnNumber));
    }
    if (part === 'idle') continue;
    part ??= 'Node.js internals';
    busy += weight;
    parts.set(part, (parts.get(part) ?? 0) + weight);
  }
  return [...parts].sort((a, b) => b[1] - a[1]).map(([part, us]) => ({ part, share: round((us / busy) * 100, 1) }));
}

async function saturation(settings: Settings, modelUrl: string) {
  const profileDir = mkdtempSync(join(tmpdir(), 'stepwise-bench-profile-'));
  const server = await startStepwise(modelUrl, { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] });
  const clock = () => Number(process.hrtime.bigint() / 1000n);
  try {
    // Sessions running runs back to back: enough of them that the server, not the clients, is the limit.
    const clients = await Promise.all(Array.from({ length: settings.scaleClients }, () => openClient(server.wsUrl)));
    let runs = 0;
    let failures = 0;
    let running = true;
    let measuring = false;
    const loop = async (client: (typeof clients)[number]) => {
      while (running) {
        const complete = new Promise<void>((resolve) => {
          const listener = (data: WebSocket.RawData) => {
            const event = JSON.parse(data.toString()) as { type: string; update_type?: string };
            if (event.update_type === 'agent_error' || event.type === 'error') failures++;
            if (event.type !== 'response_complete') return;
            client.socket.off('message', listener);
            resolve();
          };
          client.socket.on('message', listener);
        });
        client.socket.send(AGENT_RUN);
        await complete;
        if (measuring) runs++;
      }
    };
    const loops = clients.map(loop);
    await sleep(settings.scaleWarmupMs);
    measuring = true;
    const from = clock();
    const cpuBefore = cpuMs(server.pid);
    const started = now();
    await sleep(settings.scaleSeconds * 1000);
    measuring = false;
    const seconds = (now() - started) / 1000;
    const serverCpuSeconds = (cpuMs(server.pid) - cpuBefore) / 1000;
    const to = clock();
    running = false;
    await Promise.all(loops);
    for (const client of clients) client.socket.close();
    await server.stop();
    const parts = cpuByPart(profileDir, from, to);
    const result = {
      clients: settings.scaleClients,
      seconds: round(seconds, 1),
      runs,
      failures,
      modelCallsPerRun: 9,
      runsPerSecond: round(runs / seconds, 1),
      serverCores: round(serverCpuSeconds / seconds, 2),
      runsPerCpuSecond: round(runs / serverCpuSeconds, 1),
      cpuByPart: parts,
    };
    log(`   saturation: ${result.runsPerSecond} runs/s with the server on ${result.serverCores} cores: ${result.runsPerCpuSecond} runs per CPU-second`);
    return result;
  } finally {
    await server.stop().catch(() => undefined);
    rmSync(profileDir, { recursive: true, force: true });
  }
}
