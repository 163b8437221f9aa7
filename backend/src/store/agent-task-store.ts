import type { Kysely } from 'kysely';

/**
 * A task of an agent protocol (an A2A task) as kept: whose it is, its conversation, its state and
 * when that last changed, and the task itself as the protocol encodes it (JSON), which the store
 * does not read.
 */
export interface AgentTaskRecord {
  /** The tenant and owner the protocol scopes tasks by: another caller never sees the task. */
  tenant: string;
  owner: string;
  id: string;
  contextId: string;
  /** The state's name (`TASK_STATE_INPUT_REQUIRED`, …). */
  state: string;
  /** When the status last changed, in ms since the epoch (0 when unknown). */
  updatedAt: number;
  document: unknown;
}

/** Which of a caller's tasks a list holds: newest status first, then by id (descending). */
export interface AgentTaskQuery {
  contextId?: string | undefined;
  state?: string | undefined;
  /** Only tasks whose status changed after this time (ms). */
  updatedAfter?: number | undefined;
  /** The page after this task (the last of the page before). */
  after?: { updatedAt: number; id: string } | undefined;
  limit: number;
}

/** Agent protocol tasks that outlive a restart and that every instance reads (PostgreSQL). */
export interface AgentTaskStore {
  /** Keeps a task (replacing the one of its tenant, owner and id). */
  save(task: AgentTaskRecord): Promise<void>;
  load(tenant: string, owner: string, id: string): Promise<AgentTaskRecord | undefined>;
  /** A page of the caller's tasks, and how many match in all (every page). */
  list(tenant: string, owner: string, query: AgentTaskQuery): Promise<{ tasks: AgentTaskRecord[]; total: number }>;
}

export type AgentTaskTables = {
  agent_tasks: { tenant: string; owner: string; id: string; context_id: string; state: string; updated_at: number | string; document: string };
};

/** Agent protocol tasks on the store's SQL database. */
export class SqlAgentTaskStore implements AgentTaskStore {
  constructor(private readonly db: Kysely<AgentTaskTables>) {}

  async save(task: AgentTaskRecord): Promise<void> {
    const changed = { context_id: task.contextId, state: task.state, updated_at: task.updatedAt, document: JSON.stringify(task.document) };
    await this.db
      .insertInto('agent_tasks')
      .values({ tenant: task.tenant, owner: task.owner, id: task.id, ...changed })
      .onConflict((conflict) => conflict.columns(['tenant', 'owner', 'id']).doUpdateSet(changed))
      .execute();
  }

  async load(tenant: string, owner: string, id: string): Promise<AgentTaskRecord | undefined> {
    const row = await this.db
      .selectFrom('agent_tasks')
      .selectAll()
      .where('tenant', '=', tenant)
      .where('owner', '=', owner)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toRecord(row);
  }

  async list(tenant: string, owner: string, query: AgentTaskQuery): Promise<{ tasks: AgentTaskRecord[]; total: number }> {
    let matching = this.db.selectFrom('agent_tasks').where('tenant', '=', tenant).where('owner', '=', owner);
    if (query.contextId) matching = matching.where('context_id', '=', query.contextId);
    if (query.state) matching = matching.where('state', '=', query.state);
    if (query.updatedAfter !== undefined) matching = matching.where('updated_at', '>', query.updatedAfter);
    const counted = await matching.select((select) => select.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
    const after = query.after;
    const page = await (after
      ? matching.where((where) =>
          where.or([where('updated_at', '<', after.updatedAt), where.and([where('updated_at', '=', after.updatedAt), where('id', '<', after.id)])]),
        )
      : matching
    )
      .selectAll()
      .orderBy('updated_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .execute();
    return { tasks: page.map(toRecord), total: Number(counted.total) };
  }
}

function toRecord(row: AgentTaskTables['agent_tasks']): AgentTaskRecord {
  return {
    tenant: row.tenant,
    owner: row.owner,
    id: row.id,
    contextId: row.context_id,
    state: row.state,
    updatedAt: Number(row.updated_at),
    document: JSON.parse(row.document),
  };
}

/** Agent protocol tasks in memory (a store in memory: tests of one module). */
export class MemoryAgentTaskStore implements AgentTaskStore {
  private readonly tasks = new Map<string, AgentTaskRecord>();

  async save(task: AgentTaskRecord): Promise<void> {
    this.tasks.set(JSON.stringify([task.tenant, task.owner, task.id]), structuredClone(task));
  }

  async load(tenant: string, owner: string, id: string): Promise<AgentTaskRecord | undefined> {
    const task = this.tasks.get(JSON.stringify([tenant, owner, id]));
    return task && structuredClone(task);
  }

  async list(tenant: string, owner: string, query: AgentTaskQuery): Promise<{ tasks: AgentTaskRecord[]; total: number }> {
    const matching = [...this.tasks.values()]
      .filter(
        (task) =>
          task.tenant === tenant &&
          task.owner === owner &&
          (!query.contextId || task.contextId === query.contextId) &&
          (!query.state || task.state === query.state) &&
          (query.updatedAfter === undefined || task.updatedAt > query.updatedAfter),
      )
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const after = query.after;
    const rest = after ? matching.filter((task) => task.updatedAt < after.updatedAt || (task.updatedAt === after.updatedAt && task.id < after.id)) : matching;
    return { tasks: structuredClone(rest.slice(0, query.limit)), total: matching.length };
  }
}
