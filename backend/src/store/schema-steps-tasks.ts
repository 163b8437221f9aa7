import type { SchemaStep } from './schema-steps.ts';

/** Steps 0017 on: agent protocol (A2A) tasks, kept so that they outlive a restart and every instance reads them. */
export const AGENT_TASK_STEPS: SchemaStep[] = [
  {
    // One row per task of a caller (tenant, owner): what a list filters and sorts by in columns,
    // the task itself as the protocol encodes it (JSON text, which the store does not read).
    name: '0017 agent protocol tasks',
    postgres: [
      `
        create table agent_tasks (
          tenant text not null,
          owner text not null,
          id text not null,
          context_id text not null,
          state text not null,
          updated_at bigint not null,
          document text not null,
          primary key (tenant, owner, id)
        )
      `,
      `create index agent_tasks_by_update on agent_tasks (tenant, owner, updated_at, id)`,
    ],
    sqlite: [
      `
        create table agent_tasks (
          tenant text not null,
          owner text not null,
          id text not null,
          context_id text not null,
          state text not null,
          updated_at integer not null,
          document text not null,
          primary key (tenant, owner, id)
        ) strict
      `,
      `create index agent_tasks_by_update on agent_tasks (tenant, owner, updated_at, id)`,
    ],
  },
];
