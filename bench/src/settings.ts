// What a run of the benchmarks measures, from its command line:
//   --quick                 small N and few rounds, to check the harness (CI); writes to bench/out/
//   --only=a,b              a subset of sections: footprint, overhead, stop, concurrency, streaming, requests, cluster, restate
//   --sessions=10,100       the session counts of the concurrency section
//   --db-sync=full,normal   the embedded store's DB_SYNC settings the overhead section compares
//                           (default: both when the embedded store is SQLite; "none" for neither)
//   --store-label=NAME      the name the embedded store is shown under, instead of what it reports
//   --no-postgres           leave PostgreSQL out

/** The sections, in the order they run. */
export const SECTIONS = ['footprint', 'overhead', 'stop', 'concurrency', 'streaming', 'requests', 'cluster', 'restate'] as const;
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
   * Model calls each process of the overhead section makes before anything is timed. A Node
   * process here takes about 2,000 calls to reach its steady speed (the bare SDK client's CPU per
   * call falls from 2.5 ms to under 1 ms), and the floor runs once per contender per round, so
   * without this the floor would be measured warm and every contender cold.
   */
  warmupCalls: quick ? 60 : 3_000,
  /**
   * Model calls a contender of section 1 and the floor each make, untimed and in turn, just before
   * their timed pair (at least one task each). A contender idles while a dozen others run (15 s or
   * so), and an idle process on this machine comes back slow for a while: the bare SDK client, after
   * 15 s of idling while its twin kept running, took 1.92× its twin's time per call after 5 untimed
   * tasks (100 calls), 1.06× after 40 (800 calls). With one task of the contender alone, as before
   * 2026-11-27, every contender was measured part-cold against a floor always warm (the floor's own
   * code plus one SQLite commit per call read 2.19×); with 800 calls of the contender alone, the floor
   * idled meanwhile and was the cold one (the same code read 0.82×).
   */
  rewarmCalls: quick ? 0 : 800,
  rounds: quick ? 3 : 12,
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
  /** Explicit DB_SYNC settings, or undefined to decide from the store the server reports. */
  dbSync: list(option('db-sync'))?.filter((value) => value !== 'none'),
  storeLabel: option('store-label'),
  postgres: !process.argv.includes('--no-postgres'),
};
export type Settings = typeof settings;

export const now = () => performance.timeOrigin + performance.now();
export const log = (line: string) => process.stdout.write(`${line}\n`);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
