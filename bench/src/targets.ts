// The performance targets and whether a run met them, stated for every Stepwise configuration
// measured (a target met by one store and missed by another says so twice).
/* eslint-disable @typescript-eslint/no-explicit-any */
import { BARE_CLIENTS } from './concurrency.ts';

export const TARGETS = {
  /**
   * Time per model call of each Stepwise row, as a multiple of its own bound: the bare SDK streaming
   * the same replies plus one commit per call on the same store (SQLite normal, SQLite full, PostgreSQL).
   */
  boundRatio: 1.15,
  /** Server CPU per call in one growing chat (its requests carrying the whole history), as a multiple of that in a new chat. */
  growingCpuRatio: 1.5,
  /** Restate: journal steps (ctx.run) per model call, and time per call as a multiple of the in-process engine's plus its step cost. */
  restateStepsPerCall: 1.2,
  restateRatio: 1.2,
  /** Server CPU per model call, as a multiple of the streaming floor client's own CPU per call. */
  cpuRatio: 1.3,
  idleRssMb: 150,
  coldStartMs: 1_500,
  /** The lag, model → client, that N sessions in lockstep must stay under at p99. */
  lagP99Ms: 100,
  /** A stop sent on one instance for a run executing on another: to agent_stopped at the sender, and to the upstream close. */
  stopAcrossInstancesP99Ms: 50,
  /** Scale: RSS growth for 1,000 idle signed-in sockets, and the p99 of the chat list and of opening a chat among 10,000. */
  idleSocketsRssMb: 50,
  storedChatsP99Ms: 50,
} as const;

export interface Verdict {
  target: string;
  subject: string;
  measured: string;
  /** undefined: this run cannot tell (e.g. nothing to compare against). */
  met: boolean | undefined;
}

const x = (value: number) => `${value.toFixed(2)}×`;

/** Every target against the figures of one run; sections the run left out give no verdicts. */
export function assessTargets(results: any): Verdict[] {
  const verdicts: Verdict[] = [];
  const rows: any[] = results.overhead?.rows ?? [];
  const streamingFloor = rows.find((row) => row.kind === 'streaming-floor');
  const peers = rows.filter((row) => row.kind === 'peer');
  for (const row of rows.filter((candidate) => candidate.kind === 'stepwise' && candidate.chat === 'fresh')) {
    // The floor streaming the same replies plus one commit per call on the same store: what keeping
    // the same promises costs at the least.
    const bound = rows.find((candidate) => candidate.kind === 'bound' && candidate.store === row.store);
    if (bound) {
      const ratio = row.ratio / bound.ratio;
      verdicts.push({
        target: `time per model call ≤ ${x(TARGETS.boundRatio)} the streaming floor plus one commit per call on the same store`,
        subject: row.name,
        measured: `${x(row.ratio)} the floor against the bound's ${x(bound.ratio)}: ${x(ratio)}`,
        met: ratio <= TARGETS.boundRatio,
      });
    }
    if (peers.length) {
      // Block by block: the blocks of one pass ran within minutes of each other.
      const lost = peers.flatMap((peer) =>
        (row.blockRatios ?? []).flatMap((ratio: number, block: number) =>
          peer.blockRatios?.[block] !== undefined && ratio >= peer.blockRatios[block] ? [`${peer.name} in block ${block + 1}`] : [],
        ),
      );
      verdicts.push({
        target: 'faster than every peer measured alike (streaming, every step saved to SQLite), in every block',
        subject: row.name,
        measured: `${x(row.ratio)}; peers ${peers.map((peer) => `${peer.name} ${x(peer.ratio)}`).join(', ')}${lost.length ? `; not faster than ${lost.join(', ')}` : ''}`,
        met: lost.length === 0,
      });
    }
  }
  const growing = rows.find((row) => row.kind === 'stepwise' && row.chat === 'growing');
  const fresh = growing && rows.find((row) => row.kind === 'stepwise' && row.chat === 'fresh' && row.streaming && row.store === growing.store);
  if (growing?.serverCpuUsPerCall !== undefined && fresh?.serverCpuUsPerCall) {
    const ratio = growing.serverCpuUsPerCall / fresh.serverCpuUsPerCall;
    verdicts.push({
      target: `server CPU per model call in one growing chat ≤ ${x(TARGETS.growingCpuRatio)} that in a new chat`,
      subject: growing.name,
      measured: `${Math.round(growing.serverCpuUsPerCall)} µs at ${Math.round(growing.requestKbMean)} KiB per request against ${Math.round(fresh.serverCpuUsPerCall)} µs at ${Math.round(fresh.requestKbMean)} KiB: ${x(ratio)}`,
      met: ratio <= TARGETS.growingCpuRatio,
    });
  }
  for (const row of rows.filter((candidate) => candidate.kind === 'stepwise' && candidate.chat === 'fresh' && candidate.serverCpuUsPerCall !== undefined)) {
    const ratio = streamingFloor?.cpuUsPerCall ? row.serverCpuUsPerCall / streamingFloor.cpuUsPerCall : Number.NaN;
    verdicts.push({
      target: `server CPU per model call ≤ ${x(TARGETS.cpuRatio)} the streaming floor client's own`,
      subject: row.name,
      measured: `${Math.round(row.serverCpuUsPerCall)} µs against ${Math.round(streamingFloor?.cpuUsPerCall)} µs: ${x(ratio)}`,
      met: Number.isFinite(ratio) ? ratio <= TARGETS.cpuRatio : undefined,
    });
  }
  for (const row of results.footprint?.rows ?? []) {
    verdicts.push({
      target: `idle server RSS ≤ ${TARGETS.idleRssMb} MB (after start and one chat)`,
      subject: `Stepwise, ${row.store}`,
      measured: `${row.idleRssMb} MB`,
      met: row.idleRssMb <= TARGETS.idleRssMb,
    });
    verdicts.push({
      target: `cold start on a new data dir ≤ ${TARGETS.coldStartMs / 1000} s (spawn → first 200 from /api/health)`,
      subject: `Stepwise, ${row.store}`,
      measured: `${(row.coldStartMs / 1000).toFixed(2)} s (${row.starts === 1 ? 'one start' : `median of ${row.starts}`})`,
      met: row.coldStartMs <= TARGETS.coldStartMs,
    });
  }
  const concurrency = results.concurrency;
  if (concurrency?.largestUnder100ms) {
    const entries = Object.entries(concurrency.largestUnder100ms as Record<string, number>);
    // Against the bare client reading its replies as a stream (as Stepwise does); older runs had only the whole-reply one.
    const bare = entries.find(([system]) => system === BARE_CLIENTS.streaming) ?? entries.find(([system]) => system.startsWith('bare'));
    const bound = entries.find(([system]) => system === BARE_CLIENTS['streaming-journal']);
    const tested = Math.max(...(concurrency.sessions ?? concurrency.rows.map((row: any) => row.sessions)));
    const shown = (n: number) => (n ? `${n}` : 'none of those measured');
    for (const [system, n] of entries.filter(([name]) => name.startsWith('Stepwise'))) {
      const bareN = bare?.[1] ?? 0;
      const above = bareN === tested ? ' (the bare SDK held at every N measured: its limit lies higher; measure larger N)' : '';
      const boundNote = bound ? `; the bound, streaming with one SQLite commit per reply before it counts: ${shown(bound[1])}` : '';
      verdicts.push({
        target: `largest N of lockstep sessions at p99 lag < ${TARGETS.lagP99Ms} ms, against the bare streaming SDK client's in the same run`,
        subject: system,
        measured: `${shown(n)} against ${shown(bareN)}${above}${boundNote}`,
        // Short of the bare SDK's N is a miss; level with it only counts below the largest N
        // measured, since at the top neither limit was found.
        met: !bare || bareN === 0 ? undefined : n < bareN ? false : bareN === tested ? undefined : true,
      });
    }
  }
  const restate = results.restate?.rows?.find((row: any) => row.key === 'restate');
  if (restate) {
    const inProcess = results.restate.rows.find((row: any) => row.key === 'in-process');
    const stepMs = (results.restate.bound?.addedP50Us ?? Number.NaN) / 1000;
    const boundMs = inProcess ? inProcess.perCallMs + stepMs : Number.NaN;
    const ratio = restate.perCallMs / boundMs;
    verdicts.push({
      target: `Restate: time per model call ≤ ${x(TARGETS.restateRatio)} the in-process engine's plus a Restate step's measured cost`,
      subject: restate.name,
      measured: Number.isFinite(ratio)
        ? `${restate.perCallMs.toFixed(3)} ms against ${inProcess.perCallMs.toFixed(3)} ms + ${stepMs.toFixed(3)} ms: ${x(ratio)} (${x(restate.ratioToInProcess)} the in-process engine alone)`
        : `${x(restate.ratioToInProcess)} the in-process engine (no step cost measured)`,
      met: Number.isFinite(ratio) ? ratio <= TARGETS.restateRatio : undefined,
    });
    if (restate.journalStepsPerCall !== undefined) {
      verdicts.push({
        target: `Restate: ≤ ${TARGETS.restateStepsPerCall} journal round trips (ctx.run steps) per model call`,
        subject: restate.name,
        measured: `${restate.journalStepsPerCall} (${restate.journalStepsPerRun} per run)`,
        met: restate.journalStepsPerCall <= TARGETS.restateStepsPerCall,
      });
    }
  }
  const across = results.cluster?.stopRows?.find((row: any) => row.key === 'across');
  if (across) {
    const worst = Math.max(across.toEndMs.p99, across.toUpstreamCloseMs.p99);
    verdicts.push({
      target: `stop latency across instances p99 < ${TARGETS.stopAcrossInstancesP99Ms} ms`,
      subject: 'Stepwise, two instances on PostgreSQL and Redis (stop sent on B, the run on A)',
      measured: `${across.toEndMs.p99} ms to agent_stopped at B, ${across.toUpstreamCloseMs.p99} ms to the upstream close (p99 of ${results.cluster.stops} stops)`,
      met: Number.isFinite(worst) ? worst < TARGETS.stopAcrossInstancesP99Ms : false,
    });
  }
  const scale = results.scale;
  if (scale?.idleSockets) {
    const idle = scale.idleSockets;
    verdicts.push({
      target: `${idle.sockets} idle signed-in sockets: RSS growth ≤ ${TARGETS.idleSocketsRssMb} MB and no CPU while idle`,
      subject: 'Stepwise, embedded SQLite, AUTH_MODE=header',
      measured: `${idle.rssGrowthMb} MB; ${idle.idleCpuMs} ms of CPU in ${idle.idleSeconds} s idle`,
      met: idle.rssGrowthMb <= TARGETS.idleSocketsRssMb && idle.idleCpuPercent < 1,
    });
  }
  for (const row of scale?.storedChats?.rows ?? []) {
    verdicts.push({
      target: `the chat list and opening a chat among ${row.chats} stored chats: p99 ≤ ${TARGETS.storedChatsP99Ms} ms`,
      subject: `Stepwise, ${row.store}`,
      measured: `list ${row.list.p99Ms} ms, open ${row.open.p99Ms} ms`,
      met: row.list.p99Ms <= TARGETS.storedChatsP99Ms && row.open.p99Ms <= TARGETS.storedChatsP99Ms,
    });
  }
  return verdicts;
}
