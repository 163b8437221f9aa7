import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../llm/llm-client.ts';
import type { RunRecord, SessionRecord, Store } from './store.ts';

interface SessionData {
  record: SessionRecord;
  messages: LlmMessage[];
  events: LoggedEvent[];
}

/** Keeps everything in memory: for unit tests and until a database adapter replaces it. */
export class MemoryStore implements Store {
  private readonly sessions = new Map<string, SessionData>();
  private readonly runs = new Map<string, RunRecord>();

  async createSession(id: string): Promise<SessionRecord> {
    const record = { id, createdAt: new Date().toISOString() };
    this.sessions.set(id, { record, messages: [], events: [] });
    return record;
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    return this.sessions.get(id)?.record;
  }

  async deleteSession(id: string): Promise<void> {
    this.sessions.delete(id);
    for (const [runId, run] of this.runs) if (run.sessionId === id) this.runs.delete(runId);
  }

  async appendMessages(sessionId: string, messages: LlmMessage[]): Promise<void> {
    this.session(sessionId).messages.push(...structuredClone(messages));
  }

  async listMessages(sessionId: string): Promise<LlmMessage[]> {
    return structuredClone(this.session(sessionId).messages);
  }

  async createRun(run: RunRecord): Promise<void> {
    this.runs.set(run.id, { ...run });
  }

  async finishRun(runId: string, end: Pick<RunRecord, 'status' | 'endReason' | 'steps'>): Promise<void> {
    const run = this.runs.get(runId);
    if (run) Object.assign(run, end, { endedAt: new Date().toISOString() });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const run = this.runs.get(runId);
    return run && { ...run };
  }

  async appendEvent(sessionId: string, event: LoggedEvent): Promise<void> {
    const events = this.session(sessionId).events;
    const expected = (events.at(-1)?.seq ?? 0) + 1;
    if (event.seq !== expected) throw new Error(`Event seq ${event.seq} out of order (expected ${expected})`);
    events.push(event);
  }

  async listEvents(sessionId: string, afterSeq: number): Promise<LoggedEvent[]> {
    const events = this.sessions.get(sessionId)?.events ?? [];
    // seq starts at 1 without gaps, so the position of seq N is N - 1.
    return events.slice(Math.max(0, afterSeq));
  }

  async lastSeq(sessionId: string): Promise<number> {
    return this.sessions.get(sessionId)?.events.at(-1)?.seq ?? 0;
  }

  private session(id: string): SessionData {
    const session = this.sessions.get(id);
    if (!session) throw new Error(`Unknown session ${id}`);
    return session;
  }
}
