import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { AgentTaskRecord, AgentTaskStore } from '../../store/agent-task-store.ts';

/** What the task store takes of the A2A SDK (loaded at the first A2A request): the task's JSON encoding, its owner, its errors. */
export interface A2aTaskCodec {
  Task: Pick<typeof import('@a2a-js/sdk').Task, 'toJSON' | 'fromJSON'>;
  taskStateToJSON: typeof import('@a2a-js/sdk').taskStateToJSON;
  /** The owner a call's tasks are kept under (the SDK's: the caller's user name). */
  ownerOf: (context: ServerCallContext) => string;
  /** The error a page token that is not one of ours is (RequestMalformedError). */
  malformed: (message: string) => Error;
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/**
 * The A2A SDK's TaskStore over the store's agent tasks: a task (a Stepwise run, in a chat) is
 * read, answered and canceled after a restart and from any instance, scoped as the SDK's own
 * stores scope it (tenant, owner).
 */
export class StoredA2aTasks implements TaskStore {
  constructor(
    private readonly tasks: AgentTaskStore,
    private readonly codec: A2aTaskCodec,
  ) {}

  async save(task: Task, context: ServerCallContext): Promise<void> {
    const { tenant, owner } = this.scope(context);
    await this.tasks.save({
      tenant,
      owner,
      id: task.id,
      contextId: task.contextId,
      state: this.codec.taskStateToJSON(task.status?.state ?? 0),
      updatedAt: timeOf(task.status?.timestamp),
      document: this.codec.Task.toJSON(task),
    });
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const { tenant, owner } = this.scope(context);
    const found = await this.tasks.load(tenant, owner, taskId);
    return found && this.codec.Task.fromJSON(found.document);
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const { tenant, owner } = this.scope(context);
    const pageSize = Math.min(Math.max(params.pageSize || DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
    // One more than a page: whether there is a next one.
    const { tasks, total } = await this.tasks.list(tenant, owner, {
      contextId: params.contextId || undefined,
      state: params.status ? this.codec.taskStateToJSON(params.status) : undefined,
      updatedAfter: params.statusTimestampAfter ? timeOf(params.statusTimestampAfter) : undefined,
      after: params.pageToken ? this.cursor(params.pageToken) : undefined,
      limit: pageSize + 1,
    });
    const page = tasks.slice(0, pageSize);
    const last = page.at(-1);
    return {
      tasks: page.map((record) => this.listed(record, params)),
      nextPageToken: last && tasks.length > pageSize ? Buffer.from(`${last.updatedAt}|${last.id}`).toString('base64url') : '',
      pageSize,
      totalSize: total,
    };
  }

  private scope(context: ServerCallContext): { tenant: string; owner: string } {
    return { tenant: context.tenant ?? '', owner: this.codec.ownerOf(context) };
  }

  /** A task as a list shows it: its artifacts only when asked for, its history cut to historyLength. */
  private listed(record: AgentTaskRecord, params: ListTasksRequest): Task {
    const task = this.codec.Task.fromJSON(record.document);
    if (!params.includeArtifacts) task.artifacts = [];
    if (params.historyLength !== undefined) task.history = params.historyLength > 0 ? task.history.slice(-params.historyLength) : [];
    return task;
  }

  private cursor(token: string): { updatedAt: number; id: string } {
    const decoded = Buffer.from(token, 'base64url').toString('utf8');
    const at = decoded.indexOf('|');
    const updatedAt = Number(decoded.slice(0, at));
    if (at <= 0 || !Number.isSafeInteger(updatedAt)) throw this.codec.malformed('Invalid page token.');
    return { updatedAt, id: decoded.slice(at + 1) };
  }
}

/** A status timestamp in ms (0 when missing or unreadable). */
function timeOf(timestamp: string | undefined): number {
  const parsed = timestamp ? Date.parse(timestamp) : Number.NaN;
  return Number.isNaN(parsed) ? 0 : parsed;
}
