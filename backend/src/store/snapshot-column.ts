import type { MessageRecord, SnapshotRecord } from './store.ts';

/**
 * A snapshot's messages as its database column holds them: the list itself, or, for a snapshot
 * that shares its first messages with an earlier one of its session, `{ base, messages }`, where
 * `base` names that snapshot and how many of its messages come first, and `messages` the rest.
 * Snapshots written before the base existed are plain lists and read as they are.
 */
export function toSnapshotColumn(snapshot: Pick<SnapshotRecord, 'messages' | 'base'>): unknown {
  return snapshot.base ? { base: snapshot.base, messages: snapshot.messages } : snapshot.messages;
}

export function fromSnapshotColumn(value: unknown): Pick<SnapshotRecord, 'messages' | 'base'> {
  if (Array.isArray(value)) return { messages: value as MessageRecord[] };
  const stored = value as { base: NonNullable<SnapshotRecord['base']>; messages: MessageRecord[] };
  return { base: stored.base, messages: stored.messages };
}
