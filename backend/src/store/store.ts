import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../llm/llm-client.ts';

export interface SessionRecord {
  id: string;
  createdAt: string;
}

export type RunStatus = 'running' | 'completed' | 'stopped' | 'failed';

export interface RunRecord {
  id: string;
  sessionId: string;
  strategy: string;
  maxSteps: number;
  status: RunStatus;
  endReason?: string;
  steps?: number;
  startedAt: string;
  endedAt?: string;
}

/** Persistence of sessions, their conversation history, runs and event logs. */
export interface Store {
  createSession(id: string): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  deleteSession(id: string): Promise<void>;
  /** Appends to the history the model sees on the session's next turns. */
  appendMessages(sessionId: string, messages: LlmMessage[]): Promise<void>;
  listMessages(sessionId: string): Promise<LlmMessage[]>;
  createRun(run: RunRecord): Promise<void>;
  finishRun(runId: string, end: Pick<RunRecord, 'status' | 'endReason' | 'steps'>): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Appends one event; `seq` must be the session's next. */
  appendEvent(sessionId: string, event: LoggedEvent): Promise<void>;
  /** Logged events with `seq > afterSeq`, in order. */
  listEvents(sessionId: string, afterSeq: number): Promise<LoggedEvent[]>;
  /** The highest stored `seq`, 0 when the log is empty. */
  lastSeq(sessionId: string): Promise<number>;
}
