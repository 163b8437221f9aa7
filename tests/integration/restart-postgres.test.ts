import { describe } from 'vitest';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { describeKilledServer } from '../helpers/restart-cases.ts';

// The cases of restart.test.ts on a PostgreSQL server (a new database for each test), in a file of
// their own so that both stores' cases run side by side.
const url = postgresUrl();
if (url) {
  describeKilledServer({
    name: 'a PostgreSQL server',
    env: async (processes) => {
      const database = await freshPostgresDatabase(url);
      await database.db.close();
      processes.open({ close: database.drop });
      return { DATABASE_URL: database.url };
    },
  });
} else {
  describe.skip('a server killed with SIGKILL, on a PostgreSQL server (no TEST_DATABASE_URL)', () => undefined);
}
