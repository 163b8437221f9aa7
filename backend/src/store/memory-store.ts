import { MemoryDeliveryOutbox } from './delivery-outbox.ts';
import { MemoryWaitingMessages } from './waiting-messages.ts';
import { MemoryPushStore } from './push-store.ts';
import { MemoryAgentTaskStore } from './agent-task-store.ts';
import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../messages.ts';
import {
  type AppSettingsRecord,
  type JournalEntry,
  type MessagePage,
  type MessageRecord,
  type SnapshotRecord,
  type NewRun,
  type RunEnd,
  type RunRecord,
  type SearchHit,
  type SearchQuery,
  type SessionRecord,
  type SessionOwner,
  type SettingsChangeRecord,
  type ShareRecord,
  HIGHLIGHT_END,
  HIGHLIGHT_START,
  type Store,
  LOCAL_OWNER,
  titleFrom,
} from './store.ts';

interface SessionData {
  record: SessionRecord;
  messages: MessageRecord[];
  events: LoggedEvent[];
}

/** `text` with every word that starts with a term marked, when every term starts a word of it; undefined otherwise. */
function highlighted(text: string, terms: string[]): string | undefined {
  const starts = (word: string) => terms.some((term) => word.toLowerCase().startsWith(term));
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  if (!terms.every((term) => words.some((word) => word.toLowerCase().startsWith(term)))) return undefined;
  return text.replace(/[\p{L}\p{N}]+/gu, (word) => (starts(word) ? `${HIGHLIGHT_START}${word}${HIGHLIGHT_END}` : word));
}

/** Keeps everything in memory: for unit tests of the modules above it. */
export class MemoryStore implements Store {
  readonly outbox = new MemoryDeliveryOutbox();
  readonly push = new MemoryPushStore();
  readonly waiting = new MemoryWaitingMessages();
  readonly agentTasks = new MemoryAgentTaskStore();
  private readonly sessions = new Map<string, SessionData>();
  private readonly runs = new Map<string, RunRecord>();
  private readonly journals = new Map<string, JournalEntry[]>();
  private readonly snapshots = new Map<string, SnapshotRecord>();
  /** Ended sign-ins, by id, with their expiry (ISO). */
  private readonly revokedSignIns = new Map<string, string>();
  private clock = 0;
  private readonly shares = new Map<string, ShareRecord>();
  private appSettings: AppSettingsRecord = { version: 0, settings: {} };
  /** Newest first. */
  private readonly settingsChanges: SettingsChangeRecord[] = [];

  async createSession(id: string, owner: SessionOwner = { id: LOCAL_OWNER }): Promise<SessionRecord> {
    if (this.sessions.has(id)) throw new Error(`Session ${id} exists`);
    const now = this.now();
    const record: SessionRecord = { id, title: null, createdAt: now, updatedAt: now, owner: owner.id, ownerName: owner.name ?? null };
    this.sessions.set(id, { record, messages: [], events: [] });
    return { ...record };
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const record = this.sessions.get(id)?.record;
    return record && { ...record };
  }

  async renameSession(id: string, title: string): Promise<SessionRecord | undefined> {
    const session = this.sessions.get(id);
    if (!session) return undefined;
    session.record.title = title;
    return { ...session.record };
  }

  async adoptSession(id: string, owner: SessionOwner): Promise<SessionRecord | undefined> {
    const session = this.sessions.get(id);
    if (!session || session.record.owner !== LOCAL_OWNER) return undefined;
    session.record.owner = owner.id;
    session.record.ownerName = owner.name ?? null;
    return { ...session.record };
  }

  async revokeSignIn(id: string, expiresAt: string): Promise<void> {
    const now = new Date().toISOString();
    for (const [known, expiry] of this.revokedSignIns) if (expiry < now) this.revokedSignIns.delete(known);
    this.revokedSignIns.set(id, expiresAt);
  }

  async isSignInRevoked(id: string): Promise<boolean> {
    return this.revokedSignIns.has(id);
  }

  async listSessions(limit: number, owner?: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()]
      .map((session) => ({ ...session.record }))
      .filter((record) => owner === undefined || record.owner === owner)
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
      .slice(0, limit);
  }

  async searchSessions({ terms, owner, limit }: SearchQuery): Promise<SearchHit[]> {
    const hits: SearchHit[] = [];
    const sessions = [...this.sessions.values()].sort((a, b) => b.record.updatedAt.localeCompare(a.record.updatedAt));
    for (const { record, messages } of sessions) {
      if (owner !== undefined && record.owner !== owner) continue;
      const hit = (text: string, message?: SearchHit['message']) => {
        const snippet = highlighted(text, terms);
        if (snippet !== undefined)
          hits.push({
            sessionId: record.id,
            title: record.title,
            updatedAt: record.updatedAt,
            owner: record.owner,
            ownerName: record.ownerName,
            message,
            snippet,
          });
      };
      if (record.title !== null) hit(record.title);
      for (const [position, { message, afterSeq }] of messages.entries()) {
        if ((message.role === 'user' || message.role === 'assistant') && typeof message.content === 'string')
          hit(message.content, { position, role: message.role, afterSeq });
      }
    }
    return hits.slice(0, limit);
  }

  async createShare(share: Omit<ShareRecord, 'createdAt'>): Promise<ShareRecord> {
    this.session(share.sessionId);
    const saved = { ...share, createdAt: this.now() };
    this.shares.set(share.id, saved);
    return { ...saved };
  }

  async findShare(tokenHash: string): Promise<ShareRecord | undefined> {
    const share = [...this.shares.values()].find((each) => each.tokenHash === tokenHash && this.sessions.has(each.sessionId));
    return share && { ...share };
  }

  async listShares(sessionId: string): Promise<ShareRecord[]> {
    return [...this.shares.values()].filter((share) => share.sessionId === sessionId && this.sessions.has(sessionId)).map((share) => ({ ...share }));
  }

  async deleteShare(sessionId: string, id: string): Promise<boolean> {
    const share = this.shares.get(id);
    if (!share || share.sessionId !== sessionId) return false;
    return this.shares.delete(id);
  }

  async deleteSession(id: string): Promise<boolean> {
    for (const [shareId, share] of this.shares) if (share.sessionId === id) this.shares.delete(shareId);
    for (const [runId, run] of this.runs) {
      if (run.sessionId !== id) continue;
      this.runs.delete(runId);
      this.journals.delete(runId);
    }
    return this.sessions.delete(id);
  }

  async appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void> {
    const session = this.session(sessionId);
    session.messages.push(...structuredClone(messages).map((message) => ({ message, afterSeq })));
    const firstUser = messages.find((message) => message.role === 'user');
    if (firstUser && session.record.title === null) session.record.title = titleFrom(firstUser.content);
    session.record.updatedAt = this.now();
  }

  async listMessages(sessionId: string): Promise<MessageRecord[]> {
    return structuredClone(this.session(sessionId).messages);
  }

  async listLatestMessages(sessionId: string, limit: number, olderThan?: number): Promise<MessagePage> {
    const { messages } = this.session(sessionId);
    const end = Math.min(olderThan ?? messages.length, messages.length);
    const start = Math.max(0, end - limit);
    return { messages: structuredClone(messages.slice(start, end)), olderThan: end - start < limit ? undefined : start };
  }

  async createRun(run: NewRun): Promise<void> {
    this.runs.set(run.id, { ...run, status: 'running', promptTokens: 0, completionTokens: 0, startedAt: this.now() });
  }

  async finishRun(runId: string, end: RunEnd): Promise<void> {
    const run = this.runs.get(runId);
    if (!run) return;
    const session = this.sessions.get(run.sessionId);
    if (session) session.record.updatedAt = this.now();
    Object.assign(run, {
      status: end.status,
      endReason: end.endReason,
      steps: end.steps,
      endedAt: this.now(),
      checkpoint: undefined,
      promptTokens: run.promptTokens + (end.usage?.promptTokens ?? 0),
      completionTokens: run.completionTokens + (end.usage?.completionTokens ?? 0),
      ...(end.spending ? { spending: { ...end.spending } } : {}),
    });
  }

  async saveCheckpoint(runId: string, checkpoint: unknown): Promise<void> {
    const run = this.runs.get(runId);
    if (run) run.checkpoint = checkpoint === null ? undefined : structuredClone(checkpoint);
  }

  async parkRun(runId: string, checkpoint: unknown): Promise<void> {
    const run = this.runs.get(runId);
    if (run?.status === 'running') Object.assign(run, { status: 'parked', checkpoint: structuredClone(checkpoint) });
  }

  async unparkRun(runId: string): Promise<{ checkpoint: unknown } | undefined> {
    const run = this.runs.get(runId);
    if (run?.status !== 'parked') return undefined;
    run.status = 'running';
    return { checkpoint: structuredClone(run.checkpoint) };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = this.runs.get(runId);
    return run && structuredClone(run);
  }

  async listRuns(sessionId: string): Promise<RunRecord[]> {
    return [...this.runs.values()].filter((run) => run.sessionId === sessionId).map((run) => structuredClone(run));
  }

  async lastRun(sessionId: string): Promise<RunRecord | undefined> {
    return (await this.listRuns(sessionId)).at(-1);
  }

  async listRunningRuns(): Promise<RunRecord[]> {
    return [...this.runs.values()].filter((run) => run.status === 'running').map((run) => structuredClone(run));
  }

  async appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    const session = this.session(sessionId);
    const expected = (session.events.at(-1)?.seq ?? 0) + 1;
    if (event.seq !== expected) throw new Error(`Event seq ${event.seq} out of order (expected ${expected})`);
    session.events.push(structuredClone(event));
  }

  async listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]> {
    const events = this.sessions.get(sessionId)?.events ?? [];
    const start = events.findIndex((event) => event.seq > afterSeq);
    if (start === -1) return [];
    return structuredClone(events.slice(start, limit === undefined ? undefined : start + limit));
  }

  async lastSeq(sessionId: string): Promise<number> {
    return this.sessions.get(sessionId)?.events.at(-1)?.seq ?? 0;
  }

  async appendJournal(runId: string, entry: JournalEntry): Promise<void> {
    const journal = this.journals.get(runId) ?? [];
    journal[entry.position] = structuredClone(entry);
    this.journals.set(runId, journal);
  }

  async readJournal(runId: string): Promise<JournalEntry[]> {
    return structuredClone((this.journals.get(runId) ?? []).filter(Boolean));
  }

  async truncateJournal(runId: string, fromPosition: number): Promise<void> {
    this.journals.get(runId)?.splice(fromPosition);
  }

  async saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>): Promise<SnapshotRecord> {
    const saved = { ...structuredClone(snapshot), createdAt: this.now() };
    this.snapshots.set(saved.id, saved);
    return structuredClone(saved);
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    const snapshot = this.snapshots.get(id);
    return snapshot && this.sessions.has(snapshot.sessionId) ? structuredClone(snapshot) : undefined;
  }

  async listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]> {
    return [...this.snapshots.values()]
      .filter((snapshot) => snapshot.sessionId === sessionId && this.sessions.has(sessionId))
      .map(({ messages: _messages, ...rest }) => structuredClone(rest));
  }

  async replaceMessages(sessionId: string, messages: MessageRecord[]): Promise<void> {
    this.session(sessionId).messages = structuredClone(messages);
  }

  async readAppSettings(): Promise<AppSettingsRecord> {
    return structuredClone(this.appSettings);
  }

  async saveAppSettings(version: number, settings: unknown, change: Omit<SettingsChangeRecord, 'version' | 'at'>): Promise<boolean> {
    if (version !== this.appSettings.version + 1) return false;
    this.appSettings = structuredClone({ version, settings });
    this.settingsChanges.unshift(structuredClone({ version, at: new Date().toISOString(), ...change }));
    return true;
  }

  async listSettingsChanges(limit: number): Promise<SettingsChangeRecord[]> {
    return structuredClone(this.settingsChanges.slice(0, limit));
  }

  async close(): Promise<void> {}

  /** Strictly increasing times, so "newest first" is well defined even within one millisecond. */
  private now(): string {
    this.clock = Math.max(this.clock + 1, Date.now());
    return new Date(this.clock).toISOString();
  }

  private session(id: string): SessionData {
    const session = this.sessions.get(id);
    if (!session) throw new Error(`Unknown session ${id}`);
    return session;
  }
}
