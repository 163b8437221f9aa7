// `pnpm migrate-data [DATA_DIR]`: moves what an earlier release kept in its embedded PostgreSQL
// (DATA_DIR/db) into the SQLite database (DATA_DIR/stepwise.db), as the server does by itself on
// its first start. The old folder is renamed, never deleted. Stop the server first.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from './config/config.ts';
import { EMBEDDED_DATABASE_FOLDER, isPgliteDirectory, migrateEmbeddedData, SQLITE_DATABASE_FILE } from './store/open-store.ts';

async function main(): Promise<void> {
  const dataDir = process.argv[2] ?? loadConfig(process.env, { promptsDir: '' }).dataDir;
  const folder = join(dataDir, EMBEDDED_DATABASE_FOLDER);
  const file = join(dataDir, SQLITE_DATABASE_FILE);
  if (existsSync(file)) return console.log(`Nothing to do: ${file} already exists (the data was moved before, or it is a new install).`);
  if (!isPgliteDirectory(folder)) return console.log(`Nothing to do: ${folder} holds no embedded PostgreSQL database.`);
  console.log(`Moving the embedded PostgreSQL data in ${folder} into ${file}…`);
  const moved = await migrateEmbeddedData(dataDir);
  if (!moved) return;
  console.log(
    `Moved ${moved.sessions} sessions, ${moved.messages} messages, ${moved.runs} runs and ${moved.events} events. ` +
      `The old folder is now ${moved.movedAside}; remove it once you no longer need it.`,
  );
}

main().catch((error: unknown) => {
  console.error(`stepwise migrate-data: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
