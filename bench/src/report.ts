import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assessTargets, TARGETS } from './targets.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const known = (value: unknown) => value !== undefined && value !== null && !Number.isNaN(value);
const show = (value: unknown, format: (value: any) => string) => (known(value) ? format(value) : '—');
const us = (value: number) => `${Math.round(value)} µs`;
const kb = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value)} KiB`;

/** Renders the figures as Markdown tables; the reading of them is written by hand in READING.md, appended. */
export function report(results: any): string {
  const { machine, overhead, stop, concurrency, streaming, footprint, stores, requests, cluster, restate } = results;
  const lines: string[] = [];
  lines.push('# Benchmark results', '');
  lines.push(
    `Run ${results.date}${results.quick ? ' (quick smoke run: small N, figures not meaningful)' : ''} on ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, Node ${machine.node}.`,
    "Every framework talks to the same scripted OpenAI-compatible server (the tests' fixture) in its own process on 127.0.0.1; each framework runs in a warm process of its own (in section 1, a new one for each block), and Stepwise's server in another.",
  );
  if (stores) {
    const postgres = stores.postgresVersion
      ? ` PostgreSQL: ${stores.postgresVersion}, ${Object.entries(stores.postgresSettings ?? {})
          .map(([name, value]) => `${name}=${value}`)
          .join(', ')}, a new database per server.`
      : '';
    lines.push(
      `Stores: the embedded store as the server reports it (${stores.embeddedDescription ?? 'it reported nothing'}), on a new DATA_DIR per server on a disk-backed file system.${postgres}`,
    );
  }
  if (results.tree) {
    lines.push(`Tree measured: commit ${results.tree.commit}${results.tree.changed ? ', with uncommitted changes' : ', clean'}.`);
  }
  if (results.load) {
    const sections = Object.entries(results.load.sections ?? {})
      .map(([section, value]: [string, any]) => `${section} ${value.start} → ${value.end}`)
      .join(', ');
    lines.push(
      `Load average (1 min) as the run began: ${results.load.atStart}; as each section began and ended: ${sections}. ` +
        "These include the benchmark's own processes (two to four busy ones on these two cores), so 2–3 is this harness alone; more means other work on the machine.",
    );
  }
  for (const [section, message] of Object.entries(results.failed ?? {})) lines.push('', `**The ${section} section failed:** ${message}`);
  // Sections measured again in a run of their own (bench/src/merge-section.ts).
  for (const [section, rerun] of Object.entries((results.rerun ?? {}) as Record<string, { date: string; tree?: { commit: string; changed: boolean } }>)) {
    const tree = rerun.tree ? `, commit ${rerun.tree.commit}${rerun.tree.changed ? ' with uncommitted changes' : ''}` : '';
    lines.push('', `The ${section} section is from a run of its own (\`pnpm bench --only=${section}\`), ${rerun.date}${tree}.`);
  }
  lines.push('');

  const verdicts = assessTargets(results);
  if (verdicts.length) {
    lines.push('## Targets', '');
    lines.push('| target | Stepwise configuration | measured | verdict |', '| --- | --- | --- | --- |');
    for (const verdict of verdicts) {
      const word = verdict.met === undefined ? 'not shown by this run' : verdict.met ? '**met**' : '**missed**';
      lines.push(`| ${verdict.target} | ${verdict.subject} | ${verdict.measured} | ${word} |`);
    }
    lines.push('');
  }

  if (footprint) {
    const starts = footprint.rows[0]?.starts ?? 0;
    lines.push(`## 0. Cold start and idle memory (${starts} start${starts === 1 ? '' : 's'} per store)`, '');
    lines.push('| store | cold start to a healthy /api/health, median (min – max) | idle server RSS, median |', '| --- | ---: | ---: |');
    for (const row of footprint.rows) {
      lines.push(
        `| ${row.store} | ${(row.coldStartMs / 1000).toFixed(2)} s (${(row.coldStartMinMs / 1000).toFixed(2)} – ${(row.coldStartMaxMs / 1000).toFixed(2)} s) | ${row.idleRssMb} MB |`,
      );
    }
    lines.push(
      '',
      `Cold start: from spawning \`node backend/dist/main.js\` (as \`pnpm start\` runs it, after compiling the server in about 0.3 s) on a new, empty DATA_DIR to the first 200 from \`/api/health\`, asked every 5 ms. Idle RSS: the server's VmRSS after that start, one three-step agent chat in a new session and ${footprint.settleMs / 1000} s of quiet.`,
      '',
    );
  }

  if (overhead) {
    const blocks = overhead.method === 'blocks';
    const shape = blocks
      ? `${overhead.passes} block${overhead.passes === 1 ? '' : 's'} of ${overhead.rounds} timed pairs per contender`
      : `${overhead.rounds} interleaved rounds`;
    lines.push(`## 1. Overhead per model call (${overhead.steps} tool steps per task, ${shape}, zero model latency)`, '');
    lines.push(
      '| framework | model calls per task | time per call (median) | overhead per call vs floor, p50 / p95 | ratio to floor (median) | ratio per block | CPU per call, its own process | Stepwise server CPU per call | request body per call, mean / max | streamed chunks per call | peak RSS of its process |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of overhead.rows) {
      const rss = row.serverRssMb === undefined ? `${row.rssMb} MB` : `${row.serverRssMb} MB server + ${row.rssMb} MB client`;
      const body = known(row.requestKbMean) ? `${kb(row.requestKbMean)} / ${kb(row.requestKbMax)}` : '—';
      lines.push(
        `| ${row.name} | ${row.calls} | ${row.perCallMs.toFixed(3)} ms | ${us(row.overheadP50Us)} / ${us(row.overheadP95Us)} | ${row.ratio.toFixed(2)}× | ${row.blockRatios?.map((ratio: number) => ratio.toFixed(2)).join(', ') ?? '—'} | ${show(row.cpuUsPerCall, us)} | ${show(row.serverCpuUsPerCall, us)} | ${body} | ${show(row.chunksPerCall, (value) => value.toFixed(1))} | ${rss} |`,
      );
    }
    const fresh = overhead.rows.find((row: any) => row.newChatMs !== undefined);
    // Runs before 2026-11-27 evening warmed the contender alone, with one task; those of that evening interleaved contenders and warmed both sides again before each pair.
    const warming = blocks
      ? `in a block of the contender's own: its processes and a floor of the block's own start new, make ${overhead.warmupCalls} model calls each, in turn, then run their timed tasks back to back, each just after a floor task, and stop (memory a process has not touched for a minute is slow to touch again on this machine, and a process that has run for minutes is faster than one warmed up for seconds, so both sides of a pair are as old and neither has idled: see settings.warmupCalls); every contender has ${overhead.passes} such blocks, every other pass in the reverse order (two new processes of the same code differ by up to 10 % from one block to the next: the check row below measures it)`
      : overhead.rewarmCalls === undefined
        ? 'and preceded by one untimed task of the same contender (the floor runs before every contender and is always warm; the contender has idled while the others ran: too little to warm it again, see the reading of 2026-11-27 evening)'
        : `and preceded by untimed tasks of the contender and the floor in turn (at least ${overhead.rewarmCalls} model calls each): the contender has idled while the others ran, and the floor while the contender warmed up, and an idle process on this machine comes back slow`;
    const method = overhead.rows.some((row: any) => row.kind !== undefined);
    if (!method) {
      lines.push('', '(Figures of an older harness: Stepwise ran every task in one growing chat; CPU and request sizes were not measured.)', '');
    } else {
      lines.push(
        '',
        'Stepwise opens a new chat (a new WebSocket session) for every task, outside the timed part, as a user starting a conversation would; ' +
          'the row marked "one growing chat" runs every task in one session instead, so its requests carry the whole history (see their size) and its ratio grows with the history: it is not a per-call figure' +
          (blocks && overhead.growingChatKiB ? ` (each of its blocks warms up until its requests carry ${overhead.growingChatKiB} KiB).` : '.') +
          (fresh ? ` Opening a new chat (socket open to \`session\`) took ${fresh.newChatMs.toFixed(1)} ms (median, ${fresh.name}).` : ''),
        `Each run is paired with a floor run just before it, ${warming}; ratio and overhead are taken within each pair, medians over ${blocks ? 'pairs' : 'rounds'}. CPU per call: the process's user + system time over the measured runs divided by their model calls (a framework's own process: \`process.cpuUsage()\` around each run; Stepwise's server: /proc/PID/stat around each run, opening its new chat included, in 10 ms ticks, summed; with PostgreSQL, the database's own processes are not counted). Stepwise makes three model calls per step (reason, act, observe), the peers one.`,
        ...controlSentences(overhead.rows),
        '',
      );
    }
  }

  if (stop) {
    lines.push(`## 2. Stop latency (${stop.trials} stops each, during a 10 s model call)`, '');
    lines.push('| framework | to the end seen by the caller, p50 / p99 / max | to the upstream request closed, p50 / p99 / max |');
    lines.push('| --- | ---: | ---: |');
    for (const row of stop.rows) {
      const cell = (value: any) => `${value.p50} / ${value.p99} / ${value.max} ms`;
      lines.push(`| ${row.name} | ${cell(row.toEndMs)} | ${cell(row.toUpstreamCloseMs)} |`);
    }
    lines.push('');
  }

  if (concurrency) {
    const latency = concurrency.latencyMs ?? 250;
    const calls = concurrency.calls ?? 9;
    lines.push(
      `## 3. Concurrency (N sessions in lockstep, three-step runs, ${latency} ms per model call: ${calls} calls, ${((latency * calls) / 1000).toFixed(2)} s ideal)`,
      '',
    );
    lines.push(
      '| system | sessions | total time | ideal | lag model → client, p50 / p99 | failed | memory per idle session | peak RSS | CPU | CPU per model call |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of concurrency.rows) {
      const system = row.system ?? row.store;
      lines.push(
        `| ${system} | ${row.sessions} | ${(row.totalMs / 1000).toFixed(2)} s | ${(row.idealMs / 1000).toFixed(2)} s | ${row.lagP50Ms} / ${row.lagP99Ms} ms | ${show(row.failures, String)} | ${show(row.idleRssPerSessionKb, (value) => `${value} KB`)} | ${row.peakRssMb} MB | ${row.cpuPercent}% | ${show(row.cpuUsPerCall, us)} |`,
      );
    }
    const largest = Object.entries(concurrency.largestUnder100ms)
      .map(([system, n]) => `${system}: **${n || 'none of those measured'}**`)
      .join('; ');
    lines.push(
      '',
      `Largest N with p99 lag under 100 ms and nothing failed: ${largest}.`,
      '',
      "The bare SDK rows make the same calls for N sessions from one process of their own, each session's conversation growing call by call; their lag is from the model server stamping a reply to that process having it parsed (read whole, or as a stream put together from its chunks), for every call; the bound's, to the reply committed to an embedded SQLite journal (synchronous=normal) after it was read, as Stepwise stores each event before it sends it. Stepwise's lag is to the session's WebSocket client (in the runner's process) receiving the agent_reason or agent_observe event that carries the reply. RSS and CPU are the process that makes the model calls: the worker, or Stepwise's server. Failed: model calls of the bare SDK that failed (each ends its session), or Stepwise runs that ended in an error." +
        (concurrency.warmUpSessions
          ? ` Each side is a new process for each N, warmed up first by one three-step chat and then by an untimed lockstep of the same shape in sessions of its own (N sessions, ${concurrency.warmUpSessions} at most: ${calls * Math.min(concurrency.warmUpSessions, ...concurrency.sessions)} to ${calls * concurrency.warmUpSessions} model calls), as a server in use has long been.`
          : ' Each side is a new process for each N, warmed up by one three-step chat only.'),
      '',
    );
  }

  if (streaming) {
    lines.push(`## 4. Streaming relay (${streaming.tokens} tokens, as fast as the socket takes them)`, '');
    lines.push('| | |', '| --- | ---: |');
    lines.push(`| bare openai SDK stream, tokens per second | ${streaming.floorTokensPerSecond} |`);
    lines.push(
      `| Stepwise, tokens per second reaching the WebSocket client as \`assistant_delta\` | ${streaming.stepwiseTokensPerSecond} (${streaming.tokensAtClient} tokens in ${streaming.framesAtClient} frames) |`,
    );
    lines.push(`| added time per token, Stepwise relay vs bare SDK | ${streaming.addedLatencyPerTokenUs} µs |`, '');
  }
  if (requests) {
    lines.push(`## 5. One request by each HTTP path (${requests.blocks} interleaved blocks of ${requests.requests} requests, medians)`, '');
    lines.push(
      '| path | request body | reply | wall per request | CPU of the caller per request | CPU vs the SDK, parsed |',
      '| --- | --- | --- | ---: | ---: | ---: |',
    );
    for (const row of requests.rows) {
      lines.push(`| ${row.path} | ${row.size} | ${row.stream ? 'streamed' : 'whole'} | ${us(row.wallUs)} | ${us(row.cpuUs)} | ${row.cpuVsSdk.toFixed(2)}× |`);
    }
    const serialised = requests.serialise.map((row: any) => `${row.us} µs for the ${row.size} body (${row.kb} KiB)`).join(', ');
    lines.push(
      '',
      `JSON.stringify alone: ${serialised}. CPU is the calling process's (process.cpuUsage, its helper threads included), the model server runs in a process of its own.`,
      '',
    );
  }
  if (cluster) {
    const { events } = cluster;
    lines.push(
      `## 6. Several instances (two Stepwise processes on one PostgreSQL database and one Redis; ${cluster.stops} stops each, during a 10 s model call on A)`,
      '',
    );
    lines.push('| stop | to agent_stopped at the sending socket, p50 / p95 / p99 / max | to the upstream request closed, p50 / p95 / p99 / max |');
    lines.push('| --- | ---: | ---: |');
    for (const row of cluster.stopRows) {
      const cell = (value: any) => `${value.p50} / ${value.p95} / ${value.p99} / ${value.max} ms`;
      lines.push(`| ${row.name} | ${cell(row.toEndMs)} | ${cell(row.toUpstreamCloseMs)} |`);
    }
    lines.push(
      '',
      `A run of ${events.steps} tool steps on A, zero model latency (${events.eventsPerRun} logged events, ${(events.runMs / 1000).toFixed(2)} s; median of ${events.rounds} run${events.rounds === 1 ? '' : 's'}):`,
      '',
    );
    lines.push(
      '| socket | logged events per second | behind the socket on A, p50 / p99 / max | logged events missing | streamed previews received |',
      '| --- | ---: | ---: | ---: | ---: |',
    );
    lines.push(`| on A, where the run executes | ${events.onAEventsPerSecond} | — | — | ${events.previewsOnA} |`);
    lines.push(
      `| on B (a Redis notice, then read from PostgreSQL) | ${events.onBEventsPerSecond} (${events.ratio.toFixed(2)}× A's) | ${events.lagP50Ms} / ${events.lagP99Ms} / ${events.lagMaxMs} ms | ${events.missingOnB} | ${events.previewsOnB} |`,
    );
    lines.push(
      '',
      "Both instances run with the same settings (INSTANCE_ID bench-a and bench-b, a new database on the benchmark's PostgreSQL, a throwaway redis-server). Each stop uses a new session on A and a socket on B joined to it (`session_id`, `after_seq=0`); the two kinds of stop alternate. Events per second: the run's logged events that reached the socket, over the time from sending the chat on A to that socket's response_complete; the lag behind A is, event by event, when B's socket received it minus when A's did.",
      '',
    );
  }
  if (restate) {
    const version = restate.restateVersion ? ` ${restate.restateVersion}` : '';
    lines.push(
      `## 7. Restate engine (RUN_ENGINE=restate against the in-process engine; ${restate.steps} tool steps per task, ${restate.rounds} interleaved rounds, zero model latency)`,
      '',
    );
    lines.push(
      '| engine | model calls per task | time per call, median / p95 | ratio to in-process (median) | ratio to floor (median) | Stepwise server CPU per call | restate-server CPU per call | Restate journal steps (ctx.run) per call | peak RSS |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of restate.rows) {
      const steps = known(row.journalStepsPerCall) ? `${row.journalStepsPerCall} (${row.journalStepsPerRun} per run)` : '—';
      const rss = known(row.serverRssMb) ? `${row.serverRssMb} MB server${known(row.restateRssMb) ? ` + ${row.restateRssMb} MB restate-server` : ''}` : '—';
      lines.push(
        `| ${row.name} | ${row.calls} | ${row.perCallMs.toFixed(3)} / ${row.perCallP95Ms.toFixed(3)} ms | ${show(row.ratioToInProcess, (value) => `${value.toFixed(2)}×`)} | ${row.ratioToFloor.toFixed(2)}× | ${show(row.serverCpuUsPerCall, us)} | ${show(row.restateCpuUsPerCall, us)} | ${steps} | ${rss} |`,
      );
    }
    const perStep = known(restate.addedPerJournalStepUs)
      ? `, about ${us(restate.addedPerJournalStepUs)} per journal step (the run's start spread over them too)`
      : '';
    lines.push(
      '',
      `Restate adds ${us(restate.addedPerCallUs.p50Us)} per model call (median over rounds; p95 ${us(restate.addedPerCallUs.p95Us)})${perStep}.`,
      ...(restate.bound
        ? [
            '',
            `What Restate's journal step costs by itself: the floor's own loop with each model call a ctx.run step of a Restate service took ${restate.bound.restatePerCallMs.toFixed(3)} ms per call, against ${restate.bound.inProcessPerCallMs.toFixed(3)} ms with each reply committed to SQLite instead (medians, run in the same rounds): ${us(restate.bound.addedP50Us)} more per call (median of the rounds' differences), for any engine that journals its model calls in restate-server on this machine. ` +
              `Restate at ≤ ${TARGETS.restateRatio}× the in-process engine therefore needs an in-process engine of at least ${(restate.bound.addedP50Us / 1000 / (TARGETS.restateRatio - 1)).toFixed(2)} ms per call.`,
          ]
        : []),
      '',
      `Two Stepwise servers on the same store (${restate.store}), each on a new DATA_DIR of its own, one with the default in-process engine and one with RUN_ENGINE=restate against a throwaway restate-server${version} (scripts/restate.mjs: one node, its data in a temporary folder); each runs the task of section 1 from a WebSocket client in a worker process, a new chat per task. ` +
        "In each round both engines run once, the order alternating, each paired with a floor run just before it; time per call is a task's time over its model calls, median and p95 over rounds; the ratios are taken within each round (restate / in-process) and within each pair (engine / floor), medians over rounds. " +
        "CPU per call: /proc/PID/stat around each run, in 10 ms ticks, summed over the measured runs. Journal steps: the ctx.run commands of one run's workflow as restate-server's admin API reports them (`sys_journal`), over the run's model calls.",
      '',
    );
  }
  if (results.scale) lines.push(...scaleSection(results.scale));
  const reading = join(dirname(fileURLToPath(import.meta.url)), '..', 'READING.md');
  if (existsSync(reading)) lines.push(readFileSync(reading, 'utf8'));
  return `${lines.join('\n')}\n`;
}

/** What section 1's rows that are not frameworks say: the method's check, the commit per call, the streamed floor. */
function controlSentences(rows: any[]): string[] {
  const sentences: string[] = [];
  const check = rows.find((row) => row.kind === 'check');
  if (check) {
    const blocks = check.blockRatios?.length ? ` (its blocks: ${check.blockRatios.map((ratio: number) => `${ratio.toFixed(2)}×`).join(', ')})` : '';
    sentences.push(
      `The row marked "the method's check" is the floor's own code in a new process, started and warmed up as a contender is: it reads ${check.ratio.toFixed(2)}×${blocks}, what a contender with no overhead at all reads here.`,
    );
  }
  if (rows.some((row) => row.kind === 'bound')) {
    sentences.push(
      'The rows "openai SDK calls, streaming, + one … journal commit per call" are the bounds: the streaming floor\'s loop with each reply inserted into a journal table and committed before its tool runs (SQLite through libsql in WAL mode as Stepwise opens it, or the same PostgreSQL server), and nothing else: no events, no socket, no history read. Each Stepwise row is held to the bound on its own store.',
    );
  }
  if (rows.some((row) => row.kind === 'streaming-floor')) {
    sentences.push(
      'The row "openai SDK calls with stream: true" is the floor\'s loop with every reply streamed (the usage chunk asked for, as Stepwise and the peers ask) and put together from its chunks. The plain loop\'s replies carry a few words of text, so that they come in as many chunks per call as Stepwise\'s phases (the column "streamed chunks per call", counted at the model server).',
    );
  }
  if (rows.some((row) => row.kind === 'peer')) {
    sentences.push(
      "The peers are measured alike (bench/src/fair-peers.ts): each streams every reply and saves every step to SQLite before going on, through libsql with the journal's settings (native better-sqlite3 does not install here): LangGraph.js with its own SQLite checkpointer (SqliteSaver, given a libsql connection), the AI SDK's streamText committing each step's messages in onStepFinish, the Agents SDK streaming a run with a Session kept in SQLite (the JS SDK ships no SQLite session; this one is written in the bench). Stepwise also journals each call and stores every event it streams to its clients.",
    );
  }
  return sentences.length ? ['', sentences.join(' ')] : [];
}

/** Section 8: idle sockets, stored chats, runs at saturation. */
function scaleSection(scale: any): string[] {
  const lines = ['## 8. Scale on one machine', ''];
  for (const [part, message] of Object.entries(scale.failed ?? {})) lines.push(`**The ${part} part failed:** ${message}`, '');
  const idle = scale.idleSockets;
  if (idle) {
    lines.push(
      `**${idle.sockets} idle signed-in sockets** (AUTH_MODE=header, ${idle.users} users, opened 50 at a time in ${(idle.openMs / 1000).toFixed(1)} s): the server's RSS went from ${idle.rssBeforeMb} MB to ${idle.rssAfterMb} MB (**${idle.rssGrowthMb} MB**), and it used **${idle.idleCpuMs} ms of CPU in ${idle.idleSeconds} s** with them idle (${idle.idleCpuPercent} % of a core; /proc/PID/stat, 10 ms ticks).`,
      '',
    );
  }
  if (scale.storedChats?.rows?.length) {
    lines.push(`**Stored chats**, ${scale.storedChats.requests} GETs of each path one after another from one client, after 20 untimed:`, '');
    lines.push(
      '| store | chats | the chat list (GET /api/sessions), p50 / p99 | opening a chat (GET /api/sessions/:id), p50 / p99 |',
      '| --- | ---: | ---: | ---: |',
    );
    for (const row of scale.storedChats.rows) {
      lines.push(`| ${row.store} | ${row.chats} | ${row.list.p50Ms} / ${row.list.p99Ms} ms | ${row.open.p50Ms} / ${row.open.p99Ms} ms |`);
    }
    lines.push('', 'Each chat holds a question and its answer (two events, two messages), written through the store before the server starts on it.', '');
  }
  const saturation = scale.saturation;
  if (saturation) {
    lines.push(
      `**Agent runs at saturation**: ${saturation.clients} sessions running three-step runs (${saturation.modelCallsPerRun} model calls each, zero model latency) back to back for ${saturation.seconds} s after a warm-up: **${saturation.runsPerSecond} runs/s** with the server on ${saturation.serverCores} cores, **${saturation.runsPerCpuSecond} runs per CPU-second of the server** (${saturation.runs} runs, ${saturation.failures} failed). The clients and the model server share the same two cores.`,
      '',
      "Share of the server's CPU in that window, by part (node --cpu-prof; each sample by its leaf frame, native code counted with its caller):",
      '',
      '| part | share |',
      '| --- | ---: |',
      ...saturation.cpuByPart.map((row: any) => `| ${row.part} | ${row.share} % |`),
      '',
    );
  }
  return lines;
}
