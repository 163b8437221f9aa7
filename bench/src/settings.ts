// What a run of the benchmarks measures, from its command line:
//   --quick                 small N and few rounds, to check the harness (CI); writes to bench/out/
//   --only=a,b              a subset of sections: footprint, overhead, stop, concurrency, streaming, requests, cluster, restate, scale
//   --sessions=10,100       the session counts of the concurrency section
//   --db-sync=full,normal   the embedded store's DB_SYNC settings the overhead section compares
//                           (default: both when the embedded store is SQLite; "none" for neither)
//   --store-label=NAME      the name the embedded store is shown under, instead of what it reports
//   --no-postgres           leave PostgreSQL out
//   --passes=N              section 1's blocks per contender (default 3; 1 with --quick)
//   --warmup-calls=N        section 1's model calls each side makes before anything is timed (default 3000)

/** The sections, in the order they run. */
export const SECTIONS = ['footprint', 'overhead', 'stop', 'concurrency', 'streaming', 'requests', 'cluster', 'restate', 'scale'] as const;
export type Section = (typeof SECTIONS)[number];

function option(name: string): string | undefined {
  return process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}
const list = (value: string | undefined) =>
  value
    ?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);

const quick = process.argv.includes('--quick');
const only = list(option('only'));
const unknown = only?.filter((name) => !(SECTIONS as readonly string[]).includes(name));
if (unknown?.length) throw new Error(`--only: unknown section(s) ${unknown.join(', ')}; known: ${SECTIONS.join(', ')}`);

export const settings = {
  quick,
  /** A partial run (--only) writes to bench/out/ like a quick one. */
  partial: only !== undefined,
  sections: SECTIONS.filter((section) => !only || only.includes(section)),
  steps: quick ? 3 : 20,
  warmup: quick ? 1 : 3,
  /**
   * Model calls each process of the overhead section makes, in turn with the floor, before anything
   * is timed. A Node process here takes about 2,000 calls to reach its steady speed (the bare SDK
   * client's CPU per call falls from 2.5 ms to under 1 ms). And memory a process has not touched for
   * a while is slow to touch again on this machine (the guest sees no page fault: 300 MB of pages
   * took 2 ms to touch again at once, 21 ms after 20 s of idling, 92 ms after 60 s): a bare SDK client
   * left idle for 60 s while its twin kept running still took 1.26–1.38× its twin's time per call
   * after 1,600 calls in turn. So section 1 measures each contender in a block of its own: new
   * processes and a new floor, warmed up in turn and timed at once, neither side ever left idle.
   */
  warmupCalls: Number(option('warmup-calls') ?? (quick ? 60 : 3_000)),
  /**
   * Blocks per contender in section 1, every other pass in the reverse order: two new processes of
   * the same code differ by up to 10 % from one block to the next, so the median needs several.
   */
  overheadPasses: Number(option('passes') ?? (quick ? 1 : 3)),
  /** The growing chat of section 1 warms up until its requests carry this much history (or stop growing). */
  growingChatKiB: quick ? 4 : 200,
  /** Timed pairs (floor, contender) per block in section 1. */
  rounds: quick ? 3 : 8,
  stopTrials: quick ? 5 : 200,
  sessions: list(option('sessions'))?.map(Number) ?? (quick ? [10, 30] : [10, 25, 50, 75, 100, 150, 250, 500, 1000, 2000]),
  tokens: quick ? 2_000 : 20_000,
  /** One request by each HTTP path: blocks per path and kind of request, requests per block. */
  pathBlocks: quick ? 2 : 9,
  pathRequests: quick ? 50 : 300,
  /** Server starts per store for the cold-start and idle-memory measures. */
  starts: quick ? 1 : 7,
  /** How long a server is left alone after its chat before its idle memory is read. */
  settleMs: quick ? 1_000 : 2_000,
  /** Several instances: stops sent from each instance, and the tool steps of the run whose events are counted (rounds of it). */
  clusterStops: quick ? 20 : 200,
  clusterSteps: quick ? 20 : 150,
  clusterRounds: quick ? 1 : 5,
  /**
   * The Restate engine against the in-process one (section 7): interleaved rounds of the overhead
   * task (settings.steps tool steps). Each round is short (well under a second at 20 steps), so
   * more rounds than section 1's, for a p95 that is not simply the slowest round.
   */
  restateRounds: quick ? 3 : 40,
  /** Scale (section 8): idle signed-in sockets, stored chats, GETs timed per path, and the saturated window. */
  scaleSockets: quick ? 100 : 1_000,
  scaleIdleMs: quick ? 2_000 : 10_000,
  scaleChats: quick ? 500 : 10_000,
  scaleRequests: quick ? 100 : 500,
  scaleClients: quick ? 8 : 32,
  scaleWarmupMs: quick ? 2_000 : 10_000,
  scaleSeconds: quick ? 5 : 30,
  /** Explicit DB_SYNC settings, or undefined to decide from the store the server reports. */
  dbSync: list(option('db-sync'))?.filter((value) => value !== 'none'),
  storeLabel: option('store-label'),
  postgres: !process.argv.includes('--no-postgres'),
};
export type Settings = typeof settings;

export const now = () => performance.timeOrigin + performance.now();
export const log = (line: string) => process.stdout.write(`${line}\n`);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
