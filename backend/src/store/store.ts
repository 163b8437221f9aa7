import type { PushStore } from './push-store.ts';
import type { DeliveryOutbox } from './delivery-outbox.ts';
import type { WaitingMessages } from './waiting-messages.ts';
import type { AgentTaskStore } from './agent-task-store.ts';
import type { LoggedEvent } from '@stepwise/shared-types';
import type { LlmMessage } from '../messages.ts';

export interface SessionRecord {
  id: string;
  /** From the first user message; null until there is one. */
  title: string | null;
  createdAt: string;
  /** The last activity: the newest message, or the end of the newest run. */
  updatedAt: string;
  /** The user the chat belongs to (LOCAL_OWNER for the one user of AUTH_MODE none or token, and the chats from before sign-in). */
  owner: string;
  /** That user's name when the chat was made, for an admin's list of everyone's chats. */
  ownerName: string | null;
}

/** Who a new session belongs to. */
export interface SessionOwner {
  id: string;
  name?: string | undefined;
}

/**
 * The owner of the chats of AUTH_MODE none and token's one user, and so of every chat made before
 * there was sign-in: the empty id, which no identity can have (a user id has at least one
 * character), so no sign-in takes these chats; an admin adopts them (adoptSession).
 */
export const LOCAL_OWNER = '';

/** What a search looks for: see Store.searchSessions. */
export interface SearchQuery {
  /** Words of letters and digits (searchTerms makes them), at least one. */
  terms: string[];
  /** Only this user's chats; everyone's when undefined (an admin's search). */
  owner?: string | undefined;
  limit: number;
}

/** Where a search matched: a chat's title, or one message of its history. */
export interface SearchHit {
  sessionId: string;
  title: string | null;
  updatedAt: string;
  owner: string;
  ownerName: string | null;
  /** The message matched, by its place in the history and role; undefined when the title matched. */
  message?: { position: number; role: 'user' | 'assistant'; afterSeq: number } | undefined;
  /** The matched text, or the part of it around the match, each matched word between HIGHLIGHT_START and HIGHLIGHT_END. */
  snippet: string;
}

/** The marks around a matched word in a hit's snippet: private-use characters, which text hardly ever holds. */
export const HIGHLIGHT_START = '\uE000';
export const HIGHLIGHT_END = '\uE001';

/** The terms of a search box's text: its words of letters and digits, lower case, each once, at most 8. */
export function searchTerms(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, 8);
}

/** A read-only link to a chat as it stood when the link was made. */
export interface ShareRecord {
  id: string;
  /** The SHA-256 (hex) of the link's token: the token itself is shown once and never kept. */
  tokenHash: string;
  sessionId: string;
  /** The user who made the link. */
  createdBy: string;
  /** The chat's last seq when the link was made: what the link shows ends there. */
  atSeq: number;
  /** Whether the link shows the chat's files too. */
  includeFiles: boolean;
  createdAt: string;
  /** When the link stops working (ISO); undefined: until it is revoked. */
  expiresAt?: string | undefined;
}

/** A message of the history, with the log position it was accepted at. */
export interface MessageRecord {
  message: LlmMessage;
  /** The session's last seq when the message was stored; its response's events come after. */
  afterSeq: number;
}

/** A page of a session's history read from its end: `messages` oldest first; `olderThan` reads the page before it (undefined at the start). */
export interface MessagePage {
  messages: MessageRecord[];
  olderThan: number | undefined;
}

/** `parked`: waiting past its question's deadline for an answer, holding nothing (its checkpoint says on what). */
export type RunStatus = 'running' | 'parked' | 'completed' | 'stopped' | 'failed';

export interface RunRecord {
  id: string;
  sessionId: string;
  strategy: string;
  maxSteps: number;
  status: RunStatus;
  endReason?: string | undefined;
  steps?: number | undefined;
  promptTokens: number;
  completionTokens: number;
  /** The session's last seq when the run began (its events come after); unknown for older runs. */
  afterSeq?: number | undefined;
  startedAt: string;
  endedAt?: string | undefined;
  /** What a run waiting for the user's answer needs to go on after a restart. */
  checkpoint?: unknown;
  /** Cached and reasoning tokens and the cost in USD, for runs that ended since they were recorded. */
  spending?: RunSpendingRecord | undefined;
}

/** A run's cached and reasoning tokens and its cost in USD (null when a call's model had no known price). */
export interface RunSpendingRecord {
  cachedTokens: number;
  reasoningTokens: number;
  costUsd: number | null;
}

/** What a run is created with. */
export type NewRun = Pick<RunRecord, 'id' | 'sessionId' | 'strategy' | 'maxSteps' | 'afterSeq'>;

export interface RunEnd {
  status: Exclude<RunStatus, 'running' | 'parked'>;
  endReason?: string | undefined;
  steps?: number | undefined;
  usage?: { promptTokens: number; completionTokens: number } | undefined;
  spending?: RunSpendingRecord | undefined;
}

/** Persistence of sessions, their history, runs and event logs. Every write is committed when it resolves. */
export interface Store {
  /** Notifications waiting for delivery. */
  readonly outbox: DeliveryOutbox;
  /** Browsers' push subscriptions, and the server's push keys. */
  readonly push: PushStore;
  /** Messages people sent to running runs, until the runs take them. */
  readonly waiting: WaitingMessages;
  /** Agent protocol (A2A) tasks. */
  readonly agentTasks: AgentTaskStore;
  /** Stores a new session, owned by `owner` (the local user when not given). */
  createSession(id: string, owner?: SessionOwner): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Newest activity first; only `owner`'s when given, everyone's otherwise (an admin's view). */
  listSessions(limit: number, owner?: string): Promise<SessionRecord[]>;
  /** Gives the session a title of the person's choosing (it keeps it); undefined when there is no such session. */
  renameSession(id: string, title: string): Promise<SessionRecord | undefined>;
  /** Gives a chat of LOCAL_OWNER to `owner`; undefined when there is no such chat, or it is someone's already. */
  adoptSession(id: string, owner: SessionOwner): Promise<SessionRecord | undefined>;
  /** Remembers that a sign-in (its cookie's id) was ended, until `expiresAt` (ISO), when its cookie expires anyway. */
  revokeSignIn(id: string, expiresAt: string): Promise<void>;
  /** Whether a sign-in was ended (and has not expired since). */
  isSignInRevoked(id: string): Promise<boolean>;
  /** Deletes the session with its messages, runs and events; false when there was none. */
  deleteSession(id: string): Promise<boolean>;
  /**
   * The chats whose title, or a user message or answer of whose history, holds every term (a
   * word, or the start of one; the SQL stores also match other forms of a word: run, running),
   * best match first; only `owner`'s chats when given. Each hit's snippet marks the matched words.
   */
  searchSessions(query: SearchQuery): Promise<SearchHit[]>;

  /** Keeps a read-only link to a chat (its createdAt is set here). */
  createShare(share: Omit<ShareRecord, 'createdAt'>): Promise<ShareRecord>;
  /** The link whose token has this hash, expired or not; undefined once revoked (or its chat deleted). */
  findShare(tokenHash: string): Promise<ShareRecord | undefined>;
  /** A chat's links, oldest first. */
  listShares(sessionId: string): Promise<ShareRecord[]>;
  /** Revokes a chat's link; false when it has no such link. */
  deleteShare(sessionId: string, id: string): Promise<boolean>;

  /** Appends to the history the model sees; the first user message names the session. */
  appendMessages(sessionId: string, messages: LlmMessage[], afterSeq: number): Promise<void>;
  listMessages(sessionId: string): Promise<MessageRecord[]>;
  /**
   * Up to `limit` of the session's latest messages, or of those before `olderThan` (a cursor from
   * the page after them): a run reads back only as far as its context budget needs.
   */
  listLatestMessages(sessionId: string, limit: number, olderThan?: number): Promise<MessagePage>;

  createRun(run: NewRun): Promise<void>;
  finishRun(runId: string, end: RunEnd): Promise<void>;
  /** Saves (or with null, clears) what the run needs to resume. */
  saveCheckpoint(runId: string, checkpoint: unknown): Promise<void>;
  /** Parks a running run: its status becomes `parked`, `checkpoint` what it waits on (startup recovery leaves it be). */
  parkRun(runId: string, checkpoint: unknown): Promise<void>;
  /** Sets a parked run running again, once: its checkpoint; undefined when it was not parked (another answer or a stop came first). */
  unparkRun(runId: string): Promise<{ checkpoint: unknown } | undefined>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** A session's runs, oldest first. */
  listRuns(sessionId: string): Promise<RunRecord[]>;
  /** A session's latest run (the last started), without reading the others. */
  lastRun(sessionId: string): Promise<RunRecord | undefined>;
  /** Runs not finished: after a restart, these were interrupted. */
  listRunningRuns(): Promise<RunRecord[]>;

  /** Appends one event; its `seq` must be the session's next. */
  appendEvent(sessionId: string, event: LoggedEvent): Promise<void>;
  /** Logged events with `seq > afterSeq`, in order; with `limit`, at most that many (the first ones). */
  listEvents(sessionId: string, afterSeq: number, limit?: number): Promise<LoggedEvent[]>;
  /** The highest stored `seq`, 0 when the log is empty. */
  lastSeq(sessionId: string): Promise<number>;

  /** Records one entry of a run's journal (replacing one at the same position); committed when it resolves. */
  appendJournal(runId: string, entry: JournalEntry): Promise<void>;
  /** A run's journal, by position. */
  readJournal(runId: string): Promise<JournalEntry[]>;
  /** Drops a run's journal entries from `fromPosition` on (a resumed run went another way there). */
  truncateJournal(runId: string, fromPosition: number): Promise<void>;

  /** Keeps a snapshot (its createdAt is set here). */
  saveSnapshot(snapshot: Omit<SnapshotRecord, 'createdAt'>): Promise<SnapshotRecord>;
  getSnapshot(id: string): Promise<SnapshotRecord | undefined>;
  /** A session's snapshots, oldest first, without their messages. */
  listSnapshots(sessionId: string): Promise<Omit<SnapshotRecord, 'messages'>[]>;
  /** Makes `messages` the session's whole history (a rollback); one transaction. */
  replaceMessages(sessionId: string, messages: MessageRecord[]): Promise<void>;

  /** The settings admins changed in the app, and their version (0 and nothing before the first change). */
  readAppSettings(): Promise<AppSettingsRecord>;
  /**
   * Stores the settings as `version` (the one read plus one) with the change's record, in one
   * transaction; false, nothing written, when another change stored that version first.
   */
  saveAppSettings(version: number, settings: unknown, change: Omit<SettingsChangeRecord, 'version' | 'at'>): Promise<boolean>;
  /** The latest changes of the app settings, newest first. */
  listSettingsChanges(limit: number): Promise<SettingsChangeRecord[]>;

  close(): Promise<void>;
}

/** The app settings as stored: a document whose version every change bumps. */
export interface AppSettingsRecord {
  version: number;
  settings: unknown;
}

/** One change of the app settings: its version, when, by whom, and what it changed (never a secret's value). */
export interface SettingsChangeRecord {
  version: number;
  /** ISO time. */
  at: string;
  by: { id: string; name: string };
  changes: Array<{ setting: string; before: string | null; after: string | null }>;
}

/**
 * One effect of a run, recorded before the run goes on: its input, a model call's result, a tool's
 * result, an answer. `key` says what it was (a model call's purpose, a tool call's name and id), so
 * a replay that comes to a different effect at that position knows it has left the past.
 */
export interface JournalEntry {
  position: number;
  kind: string;
  key: string;
  value: unknown;
  /** The run's step when the entry was made (0 before its first); a run can be rewound to a step's end. */
  step?: number;
}

/** A saved copy of a session's working state (the model's history), immutable once saved. */
export interface SnapshotRecord {
  id: string;
  sessionId: string;
  label: string;
  /** `manual` (saved by a user) or `rollback` (the state a rollback left behind). */
  kind: 'manual' | 'rollback';
  /** The session's last run when it was saved, and that run's steps. */
  runId?: string | undefined;
  step?: number | undefined;
  /** The session's last seq when it was saved. */
  atSeq: number;
  createdAt: string;
  /** The messages the snapshot holds itself: all of them, or those after its base's. */
  messages: MessageRecord[];
  /** Its first `count` messages are the first `count` of snapshot `id` (an earlier one of its session), kept once. */
  base?: { id: string; count: number } | undefined;
}

/** The title a session gets from its first user message. */
export function titleFrom(content: string): string {
  // Control characters (NUL above all, which PostgreSQL text cannot hold) become spaces.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  const line = content.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
  if (!line) return 'Untitled chat';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/**
 * Several instances: the lease an instance holds on a session, which its run's writes carry. A
 * write whose lease has since passed to another instance (this one stalled past its lease) is
 * refused, so a stale instance never overwrites the log or the journal of a run another one took over.
 */
export interface FenceToken {
  sessionId: string;
  instanceId: string;
  /** Bumped at every claim of the session: a lease given up and taken again is another lease. */
  generation: number;
}

/** Where the store learns which lease a write is made under (undefined: the write is not fenced). */
export interface Fence {
  forSession(sessionId: string): FenceToken | undefined;
  forRun(runId: string): FenceToken | undefined;
}

/** A write made under a lease another instance holds now: refused, nothing written. */
export class StaleLeaseError extends Error {
  constructor(readonly sessionId: string) {
    super(`This instance no longer holds session ${sessionId}: another instance took it over, and this write was refused`);
    this.name = 'StaleLeaseError';
  }
}
