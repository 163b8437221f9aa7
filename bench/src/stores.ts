// The stores Stepwise runs on in the benchmarks: the embedded one, named by what the server
// reports (SQLite, with DB_SYNC=full and normal compared where it matters), and a PostgreSQL
// server with durable settings when one can start.
import { type BenchPostgres, startBenchPostgres } from './postgres.ts';
import { setEmbeddedStoreLabel, startStepwise } from './stepwise-server.ts';
import { log, type Settings } from './settings.ts';

/** One way to run Stepwise's store: its name in tables, and the environment a server needs for it. */
export interface StoreSetup {
  key: string;
  label: string;
  /** A fresh environment for one server (PostgreSQL: a new, empty database each time). */
  env(): Promise<Record<string, string>>;
  /** After a measurement on this store: its writes to disk, done now (PostgreSQL: a checkpoint). */
  settle?(): Promise<void>;
}

export interface Stores {
  /** The embedded store as the server's defaults run it. */
  embedded: StoreSetup;
  /** The embedded store under each DB_SYNC setting compared (just `embedded` when none is). */
  embeddedVariants: StoreSetup[];
  postgres: StoreSetup | undefined;
  /** What the servers reported, and PostgreSQL's version and settings, for the report. */
  details: { embeddedDescription: string | undefined; postgresVersion?: string; postgresSettings?: Record<string, string> };
  close(): Promise<void>;
}

/** Starts one server to see which embedded store this tree has, and PostgreSQL if wanted. */
export async function prepareStores(settings: Settings): Promise<Stores> {
  setEmbeddedStoreLabel(settings.storeLabel);
  // The server does not call the model while it starts; no model server is needed to ask it.
  const probe = await startStepwise('http://127.0.0.1:9/v1');
  const { label, description } = probe.store;
  await probe.stop();
  const sqlite = label === 'embedded SQLite';
  const syncs = settings.dbSync ?? (sqlite ? ['full', 'normal'] : []);
  log(`   embedded store: ${label} (the server reports: ${description ?? 'nothing'})${syncs.length ? `; DB_SYNC compared: ${syncs.join(', ')}` : ''}`);
  const fixed = (key: string, name: string, env: Record<string, string>): StoreSetup => ({ key, label: name, env: async () => env });
  const embedded = fixed('embedded', syncs.length ? `${label} (default DB_SYNC)` : label, {});
  const embeddedVariants = syncs.length ? syncs.map((sync) => fixed(`embedded-${sync}`, `${label}, DB_SYNC=${sync}`, { DB_SYNC: sync })) : [embedded];

  let postgres: BenchPostgres | undefined;
  if (settings.postgres) {
    postgres = await startBenchPostgres().catch((error: Error) => {
      log(`   (no PostgreSQL: ${error.message.split('\n')[0]})`);
      return undefined;
    });
  }
  return {
    embedded,
    embeddedVariants,
    postgres: postgres && {
      key: 'postgres',
      label: 'PostgreSQL',
      env: async () => ({ DATABASE_URL: await postgres.newDatabase() }),
      settle: () => postgres.checkpoint(),
    },
    details: {
      embeddedDescription: description?.replace(/ (in|at) \/\S+/g, ''),
      ...(postgres ? { postgresVersion: postgres.version, postgresSettings: { ...postgres.settings } } : {}),
    },
    close: async () => postgres?.stop(),
  };
}
