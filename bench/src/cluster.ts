// 6. Several instances: two Stepwise processes, A and B, on one PostgreSQL database and one Redis,
// as the README's "Running several instances" sets them up. A run executes on A while a socket on
// B, joined to the same session, stops it (the command reaches A through Redis; the ending comes
// back to B from PostgreSQL on a Redis notice), interleaved with the same stop sent by the socket
// on A; then a run on A making many model calls at zero latency, its events counted by a socket on
// B and by the socket on A that started it.
import WebSocket from 'ws';
import { startTestRedis } from '../../scripts/redis.mjs';
import { startModelServer } from './processes.ts';
import { log, now, type Settings, sleep } from './settings.ts';
import { median, quantile, round } from './stats.ts';
import { type StepwiseServer, startStepwise } from './stepwise-server.ts';
import type { Stores } from './stores.ts';

type Event = Record<string, unknown> & { type?: string; update_type?: string; seq?: number };

/** How long an event the benchmark waits for may take before the section fails. */
const EVENT_TIMEOUT_MS = 30_000;

export async function cluster(settings: Settings, stores: Stores) {
  log(
    `6. several instances: ${settings.clusterStops} stops from each instance during a 10 s model call on A; ${settings.clusterRounds} run${settings.clusterRounds === 1 ? '' : 's'} of ${settings.clusterSteps} tool steps on A, followed from B`,
  );
  if (!stores.postgres) throw new Error('several instances need PostgreSQL (Debian package "postgresql"), left out or not found');
  // Stopped in reverse order however the section ends: the servers first, then Redis, then the model server.
  const stops: (() => Promise<void>)[] = [];
  try {
    const model = await startModelServer({ BENCH_MODE: 'cluster', BENCH_STEPS: String(settings.clusterSteps) });
    stops.push(model.stop);
    const redis = await startTestRedis();
    // Redis runs in a process group of its own: the runner's exit hooks do not know it.
    process.once('exit', redis.stopNow);
    stops.push(async () => {
      await redis.stop();
      process.off('exit', redis.stopNow);
    });
    const env = {
      ...(await stores.postgres.env()),
      REDIS_URL: redis.url,
      AGENT_MAX_STEPS_LIMIT: String(Math.max(50, settings.clusterSteps)),
    };
    const started = await Promise.allSettled(['bench-a', 'bench-b'].map((id) => startStepwise(model.url, { env: { ...env, INSTANCE_ID: id } })));
    for (const result of started) if (result.status === 'fulfilled') stops.push(result.value.stop);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    const [a, b] = started.map((result) => (result as PromiseFulfilledResult<StepwiseServer>).value) as [StepwiseServer, StepwiseServer];

    // Stops: from B (across instances) and from A (where the run executes), alternating which goes
    // first; the first `warmup` of each are not counted.
    const measured = { across: { toEnd: [] as number[], toClose: [] as number[] }, local: { toEnd: [] as number[], toClose: [] as number[] } };
    for (let trial = -settings.warmup; trial < settings.clusterStops; trial++) {
      for (const from of trial % 2 === 0 ? (['across', 'local'] as const) : (['local', 'across'] as const)) {
        const { toEnd, toClose } = await stopOnce(a, b, from, `stop-${from}-${trial}`, model.stats);
        if (trial < 0) continue;
        measured[from].toEnd.push(toEnd);
        measured[from].toClose.push(toClose);
      }
    }
    const summary = (values: number[]) => ({
      p50: round(median(values), 2),
      p95: round(quantile(values, 0.95), 2),
      p99: round(quantile(values, 0.99), 2),
      max: round(Math.max(...values), 2),
    });
    const stopRows = [
      { key: 'across', name: 'stop sent on B, the run on A', toEndMs: summary(measured.across.toEnd), toUpstreamCloseMs: summary(measured.across.toClose) },
      {
        key: 'local',
        name: 'stop sent on A, where the run executes (B joined too)',
        toEndMs: summary(measured.local.toEnd),
        toUpstreamCloseMs: summary(measured.local.toClose),
      },
    ];
    for (const row of stopRows) log(`   ${JSON.stringify(row)}`);

    // Events: a run of many tool steps on A, zero model latency; one run first to warm up, not counted.
    const runs = [];
    for (let run = -1; run < settings.clusterRounds; run++) {
      const figures = await followRun(a, b, run < 0 ? 3 : settings.clusterSteps);
      if (run >= 0) runs.push(figures);
    }
    const lags = runs.flatMap((run) => run.lags);
    const onA = median(runs.map((run) => run.events / (run.onAMs / 1000)));
    const onB = median(runs.map((run) => run.eventsOnB / (run.onBMs / 1000)));
    const events = {
      steps: settings.clusterSteps,
      rounds: settings.clusterRounds,
      eventsPerRun: median(runs.map((run) => run.events)),
      runMs: round(median(runs.map((run) => run.onAMs)), 0),
      onAEventsPerSecond: round(onA, 0),
      onBEventsPerSecond: round(onB, 0),
      ratio: round(onB / onA, 3),
      lagP50Ms: round(median(lags), 2),
      lagP99Ms: round(quantile(lags, 0.99), 2),
      lagMaxMs: round(Math.max(...lags), 2),
      /** Logged events A's socket received that B's did not, over every run (0: B saw them all, in order). */
      missingOnB: runs.reduce((sum, run) => sum + run.missingOnB, 0),
      /** Frames outside the log (streamed previews), per run: they do not travel between instances. */
      previewsOnA: median(runs.map((run) => run.previewsOnA)),
      previewsOnB: median(runs.map((run) => run.previewsOnB)),
    };
    log(`   ${JSON.stringify(events)}`);
    return { stops: settings.clusterStops, stopRows, events };
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => log(`   could not stop a process: ${String(error)}`));
  }
}

/**
 * One stop: a new session on A starts an agent run whose model call takes 10 s; a socket on B
 * joins the session; once the model server has the call, the socket on B (`across`) or the one
 * on A (`local`) sends the stop. Times from sending it to that socket receiving agent_stopped,
 * and to the model server seeing the request closed.
 */
async function stopOnce(a: StepwiseServer, b: StepwiseServer, from: 'across' | 'local', marker: string, stats: string) {
  const onA = await join(a.wsUrl);
  const ended = [onA.next((event) => event.type === 'response_complete')];
  onA.send({ type: 'chat', content: marker, agent_mode: true });
  await modelHas(stats, marker);
  const onB = await join(b.wsUrl, onA.sessionId);
  ended.push(onB.next((event) => event.type === 'response_complete'));
  const stopper = from === 'across' ? onB : onA;
  const stopped = stopper.next((event) => event.update_type === 'agent_stopped' || event.type === 'error');
  const stopAt = now();
  stopper.send({ type: 'agent_control', action: 'stop' });
  const { event, at: endedAt } = await stopped;
  if (event.type === 'error') throw new Error(`the stop sent on ${from === 'across' ? 'B' : 'A'} was refused: ${JSON.stringify(event)}`);
  let closedAt: number | null = null;
  for (let attempt = 0; attempt < 40 && closedAt === null; attempt++) {
    const seen = (await (await fetch(`${stats}/closed?marker=${encodeURIComponent(marker)}`)).json()) as { closedAt?: number | null };
    closedAt = seen.closedAt ?? null;
    if (closedAt === null) await sleep(25);
  }
  await Promise.all(ended);
  await Promise.all([onA.close(), onB.close()]);
  return { toEnd: endedAt - stopAt, toClose: closedAt === null ? Number.POSITIVE_INFINITY : closedAt - stopAt };
}

/**
 * One run of `steps` tool steps on A, in a session a socket on B has joined (a one-step run
 * first stores the session, so that B can join it): the logged events each socket receives, from
 * sending the chat on A to each socket's response_complete, and how long after A's socket B's
 * received each event.
 */
async function followRun(a: StepwiseServer, b: StepwiseServer, steps: number) {
  const onA = await join(a.wsUrl);
  const first = onA.next((event) => event.type === 'response_complete');
  onA.send({ type: 'chat', content: 'Count', agent_mode: true, agent_max_steps: 1, tools: ['calculator'] });
  await first;
  const onB = await join(b.wsUrl, onA.sessionId);
  const after = Math.max(onA.lastSeq(), onB.lastSeq());
  const complete = [onA, onB].map((socket) => socket.next((event) => event.type === 'response_complete' && (event.seq ?? 0) > after));
  const previews = [onA.previews, onB.previews];
  const sentAt = now();
  onA.send({ type: 'chat', content: 'Count', agent_mode: true, agent_max_steps: steps, tools: ['calculator'] });
  const [endA, endB] = await Promise.all(complete);
  const loggedA = onA.logged.filter((event) => event.seq > after);
  const loggedB = new Map(onB.logged.filter((event) => event.seq > after).map((event) => [event.seq, event.at]));
  const lags = loggedA.flatMap((event) => (loggedB.has(event.seq) ? [loggedB.get(event.seq)! - event.at] : []));
  const figures = {
    events: loggedA.length,
    eventsOnB: loggedB.size,
    onAMs: endA!.at - sentAt,
    onBMs: endB!.at - sentAt,
    lags,
    missingOnB: loggedA.length - lags.length,
    previewsOnA: onA.previews - previews[0]!,
    previewsOnB: onB.previews - previews[1]!,
  };
  await Promise.all([onA.close(), onB.close()]);
  return figures;
}

/** Resolves once the model server has the request whose last user message is `marker`. */
async function modelHas(stats: string, marker: string): Promise<void> {
  const deadline = now() + EVENT_TIMEOUT_MS;
  for (;;) {
    const seen = (await (await fetch(`${stats}/received?marker=${encodeURIComponent(marker)}`)).json()) as { receivedAt?: number };
    if (seen.receivedAt) return;
    if (now() > deadline) throw new Error(`the model server never received the run's call (${marker})`);
    await sleep(1);
  }
}

/**
 * A socket of a session on one instance: a new session, or `sessionId` replayed from its start.
 * Resolves once the server has sent `session` and, when joining, replayed the log up to then.
 * Notes when each logged event arrived, and counts the frames outside the log (streamed previews).
 */
async function join(wsUrl: string, sessionId?: string) {
  const socket = new WebSocket(sessionId ? `${wsUrl}?session_id=${sessionId}&after_seq=0` : wsUrl);
  const logged: { seq: number; at: number }[] = [];
  const waiting = new Set<{ match: (event: Event, at: number) => boolean; fail: (error: Error) => void }>();
  const state = { previews: 0 };
  socket.on('message', (data) => {
    const at = now();
    const event = JSON.parse(data.toString()) as Event;
    if (typeof event.seq === 'number') logged.push({ seq: event.seq, at });
    else if (event.type !== 'session') state.previews++;
    for (const waiter of waiting) if (waiter.match(event, at)) waiting.delete(waiter);
  });
  // A socket that closes (or errs) ends whatever still waits on it.
  socket.on('error', () => undefined);
  socket.on('close', () => {
    for (const waiter of waiting) waiter.fail(new Error(`the socket on ${wsUrl} closed before an awaited event`));
    waiting.clear();
  });
  const next = (predicate: (event: Event) => boolean) => {
    const arrived = new Promise<{ event: Event; at: number }>((resolve, reject) => {
      const timer = setTimeout(
        () => waiter.fail(new Error(`an awaited event did not reach the socket on ${wsUrl} within ${EVENT_TIMEOUT_MS / 1000} s`)),
        EVENT_TIMEOUT_MS,
      );
      const waiter = {
        match: (event: Event, at: number) => {
          if (!predicate(event)) return false;
          clearTimeout(timer);
          resolve({ event, at });
          return true;
        },
        fail: (error: Error) => {
          clearTimeout(timer);
          waiting.delete(waiter);
          reject(error);
        },
      };
      waiting.add(waiter);
    });
    // Awaited by the caller; when the caller has already failed, a late rejection is nobody's.
    arrived.catch(() => undefined);
    return arrived;
  };
  const greeting = next((event) => event.type === 'session');
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const { event: session } = await greeting;
  const lastSeq = Number(session.last_seq ?? 0);
  if (sessionId && lastSeq > 0 && !logged.some((event) => event.seq >= lastSeq)) await next((event) => (event.seq ?? 0) >= lastSeq);
  return {
    sessionId: String(session.session_id),
    logged,
    get previews() {
      return state.previews;
    },
    lastSeq: () => logged.at(-1)?.seq ?? lastSeq,
    next,
    send: (message: Record<string, unknown>) => socket.send(JSON.stringify(message)),
    /** Closes the socket and waits for the server's close frame. */
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      }),
  };
}
