import { describeKilledServer } from '../helpers/restart-cases.ts';

// On PostgreSQL: restart-postgres.test.ts. On the embedded database each start opens a new data
// folder, which takes seconds on a busy machine.
describeKilledServer({
  name: 'the embedded database',
  env: async (processes) => ({ DATA_DIR: processes.folder('stepwise-data-') }),
});
