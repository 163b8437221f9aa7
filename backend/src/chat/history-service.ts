import type { ErrorCode, SnapshotList } from '@stepwise/shared-types';
import { listSnapshots } from './session-snapshots.ts';
import type { HistoryMessage, RunSummary, SessionDetail, SessionEvents, SessionSummary } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import { LOCAL_OWNER, type RunRecord, type SessionRecord, type Store } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { UUID } from '../util/ids.ts';
import { SessionFiles } from '../files/session-files.ts';
import { SessionManager } from './session-manager.ts';
import { chatAccess, ownerOf, type User } from '../auth/user.ts';

/** What a request means to do with a chat: read it (its owner, or an admin) or change it (its owner only). */
export type Intent = 'read' | 'write';

/** An events page holds about this many bytes of events at most (and always one), read at most this many at a time. */
export const EVENTS_PAGE_MAX_BYTES = 4 * 1024 * 1024;
const EVENTS_CHUNK = 200;
/** The first read of a page: small, until the events' size is known. */
const EVENTS_FIRST_CHUNK = 20;
/** About how many bytes of events one read of the store fetches (one read holds the event loop while it is decoded). */
const EVENTS_CHUNK_BYTES = 512 * 1024;

/** Why a history request could not be answered. */
export class HistoryError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409,
    readonly code: Extract<ErrorCode, 'invalid_id' | 'invalid_query' | 'not_found' | 'read_only' | 'admin_only' | 'already_owned'>,
    message: string,
  ) {
    super(message);
    this.name = 'HistoryError';
  }
}

/** Past sessions for the history API: what they said, their runs, their event logs. */
@injectable()
export class HistoryService {
  constructor(
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(SessionManager) private readonly sessions: SessionManager,
    @inject(SessionFiles) private readonly files: SessionFiles,
  ) {}

  /**
   * Throws the 400/404 HistoryError unless `id` names a session: a stored one, or a live one that
   * nobody wrote in yet, which is stored now when the caller is about to write in it (a file
   * attached before the first message).
   */
  async requireSession(id: string, viewer: User, intent: Intent): Promise<void> {
    if (!UUID.test(id)) throw new HistoryError(400, 'invalid_id', 'A session id is a UUID');
    this.allow(viewer, await this.sessions.ownerOf(id), intent);
    if (!(await this.sessions.exists(id, { write: intent === 'write' }))) throw new HistoryError(404, 'not_found', 'No such session');
  }

  /**
   * Sessions someone wrote in (a page that only connected leaves an empty one behind), newest
   * first: the viewer's own, or with `everyone` (an admin's view) everyone's, each naming its owner.
   */
  async list(viewer: User, limit = 100, everyone = false): Promise<SessionSummary[]> {
    const all = everyone && viewer.admin;
    const sessions = await this.store.listSessions(limit * 2, all ? undefined : viewer.id);
    return sessions
      .filter((session) => session.title !== null)
      .slice(0, limit)
      .map((session) => (all ? { ...toSummary(session), owner: { id: session.owner, name: session.ownerName } } : toSummary(session)));
  }

  async get(id: string, viewer: User): Promise<SessionDetail> {
    const session = await this.find(id, viewer, 'read');
    const [messages, runs, lastSeq] = await Promise.all([this.store.listMessages(id), this.store.listRuns(id), this.store.lastSeq(id)]);
    return {
      session: toSummary(session),
      messages: messages.flatMap(({ message, afterSeq }): HistoryMessage[] =>
        (message.role === 'user' || message.role === 'assistant') && typeof message.content === 'string' && message.content
          ? [{ role: message.role, content: message.content, after_seq: afterSeq }]
          : [],
      ),
      runs: runs.map(toRunSummary),
      last_seq: lastSeq,
    };
  }

  /**
   * One page of the event log, as the JSON text of a SessionEvents: at most `limit` events after
   * `afterSeq`, and about EVENTS_PAGE_MAX_BYTES of them (always at least one). `last_seq` is the
   * seq to ask after for the next page (the session's last when the page is empty); `has_more`
   * says whether to. The log is read a chunk at a time, each event encoded once as it comes, and
   * the event loop is let go between chunks: a page of a huge log neither costs more memory than
   * one page nor holds up the server's other requests while it is built. `bytes` is what it cost.
   */
  async events(id: string, viewer: User, afterSeq: number, limit: number): Promise<{ json: string; bytes: number }> {
    await this.find(id, viewer, 'read');
    const encoded: string[] = [];
    let bytes = 0;
    let hasMore = false;
    let from = afterSeq;
    let lastSeq: number | undefined;
    let chunkSize = EVENTS_FIRST_CHUNK;
    for (;;) {
      // One more than is left tells whether another page follows, without counting the rest.
      const want = Math.min(chunkSize, limit + 1 - encoded.length);
      const chunk = await this.store.listEvents(id, from, want);
      for (const event of chunk) {
        const text = JSON.stringify(event);
        if (encoded.length === limit || (encoded.length > 0 && bytes + text.length > EVENTS_PAGE_MAX_BYTES)) {
          hasMore = true;
          break;
        }
        encoded.push(text);
        bytes += text.length;
        lastSeq = event.seq;
      }
      if (hasMore || chunk.length < want) break;
      from = chunk.at(-1)!.seq;
      // About EVENTS_CHUNK_BYTES of events (or what is left of the page), as far as their sizes so far tell.
      const average = bytes / encoded.length;
      chunkSize = Math.max(1, Math.min(EVENTS_CHUNK, Math.ceil(Math.min(EVENTS_CHUNK_BYTES, EVENTS_PAGE_MAX_BYTES - bytes) / average) + 1));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const page: Omit<SessionEvents, 'events'> = { last_seq: lastSeq ?? (await this.store.lastSeq(id)), has_more: hasMore };
    return { json: `{"events":[${encoded.join(',')}],"last_seq":${page.last_seq},"has_more":${page.has_more}}`, bytes };
  }

  /** The session's snapshots and restore points (every step's end), oldest first. */
  async snapshots(id: string, viewer: User): Promise<SnapshotList> {
    await this.find(id, viewer, 'read');
    return { snapshots: await listSnapshots(this.store, id) };
  }

  /** Deletes a session and everything in it, stopping its run first. */
  /** A chat renamed by the person: the title is kept (the first message no longer names it). */
  async rename(id: string, viewer: User, title: string): Promise<SessionSummary> {
    await this.find(id, viewer, 'write');
    const renamed = await this.store.renameSession(id, title);
    if (!renamed) throw new HistoryError(404, 'not_found', `No chat ${id}`);
    return toSummary(renamed);
  }

  async delete(id: string, viewer: User): Promise<void> {
    await this.find(id, viewer, 'write');
    await this.sessions.delete(id, async () => {
      await this.store.deleteSession(id);
      await this.files.removeSession(id);
    });
  }

  /**
   * An admin adopts a chat from before sign-in (owned by nobody any identity can be): it becomes
   * theirs. Only an admin may, and only such a chat: another person's chat is never taken.
   */
  async adopt(id: string, viewer: User): Promise<SessionSummary & { owner: { id: string; name: string | null } }> {
    if (!UUID.test(id)) throw new HistoryError(400, 'invalid_id', 'A session id is a UUID');
    if (!viewer.admin) throw new HistoryError(403, 'admin_only', 'Only an admin may adopt a chat from before sign-in');
    const owner = await this.sessions.ownerOf(id);
    if (owner === undefined) throw new HistoryError(404, 'not_found', 'No such session');
    if (owner !== LOCAL_OWNER) throw new HistoryError(409, 'already_owned', 'This chat has an owner; only a chat from before sign-in can be adopted');
    const adopted = await this.sessions.adopt(id, ownerOf(viewer));
    // Adopted by someone else between the read and the write.
    if (!adopted) throw new HistoryError(409, 'already_owned', 'This chat has an owner; only a chat from before sign-in can be adopted');
    return { ...toSummary(adopted), owner: { id: adopted.owner, name: adopted.ownerName } };
  }

  private async find(id: string, viewer: User, intent: Intent): Promise<SessionRecord> {
    if (!UUID.test(id)) throw new HistoryError(400, 'invalid_id', 'A session id is a UUID');
    const session = await this.store.getSession(id);
    this.allow(viewer, session?.owner, intent);
    return session!;
  }

  /**
   * Refuses what `viewer` may not do with a chat owned by `owner`: another user's chat (or none)
   * is not found, whatever the intent, so nothing tells that it exists; an admin may read anyone's
   * and change only their own.
   */
  private allow(viewer: User, owner: string | undefined, intent: Intent): void {
    const access = owner === undefined ? 'none' : chatAccess(viewer, owner);
    if (access === 'none') throw new HistoryError(404, 'not_found', 'No such session');
    if (access === 'watch' && intent === 'write')
      throw new HistoryError(403, 'read_only', 'This chat is another person’s: an admin may read it and stop its run, not change it');
  }
}

export function toSummary(session: SessionRecord): SessionSummary {
  return { id: session.id, title: session.title, created_at: session.createdAt, last_activity_at: session.updatedAt };
}

export function toRunSummary(run: RunRecord): RunSummary {
  return {
    id: run.id,
    strategy: run.strategy,
    max_steps: run.maxSteps,
    status: run.status,
    end_reason: run.endReason ?? null,
    steps: run.steps ?? null,
    prompt_tokens: run.promptTokens,
    completion_tokens: run.completionTokens,
    ...(run.spending ? { cached_tokens: run.spending.cachedTokens, reasoning_tokens: run.spending.reasoningTokens, cost_usd: run.spending.costUsd } : {}),
    started_at: run.startedAt,
    ended_at: run.endedAt ?? null,
  };
}
