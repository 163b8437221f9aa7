import type { DeltaEvent, ErrorEvent, LoggedEvent, LoggedEventBody, ToolProgressEvent, ToolsChangedEvent } from '@stepwise/shared-types';
import type { EventSink } from '../agent/event-sink.ts';
import type { Store } from '../store/store.ts';
import type { ClientConnection } from './client-connection.ts';

/**
 * A session's event log and its live audience. Every event gets the next `seq`, is stored, and
 * only then goes to the connected clients (write-ahead). One queue orders storing, sending and
 * replaying, so a client that joins mid-run sees every event once, in order.
 */
export class SessionEventLog implements EventSink {
  private readonly connections = new Set<ClientConnection>();
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  /** Deltas of one stream that arrived in the same turn of the event loop, sent as one. */
  private pendingDelta: DeltaEvent | undefined;
  private flushScheduled = false;

  constructor(
    private readonly sessionId: string,
    private readonly store: Store,
    private seq: number,
  ) {}

  /** The highest `seq` logged so far. */
  get lastSeq(): number {
    return this.seq;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  emit(body: LoggedEventBody): Promise<void> {
    return this.enqueue(async () => {
      const event = { ...body, seq: this.seq + 1, ts: new Date().toISOString() } as LoggedEvent;
      await this.store.appendEvent(this.sessionId, event);
      this.seq = event.seq;
      this.flushDelta(); // the full event always follows its previews
      for (const connection of this.connections) connection.send(event);
    });
  }

  /**
   * Streaming previews are coalesced: deltas of the same stream that arrive in one turn of the
   * event loop (a model often sends many in one network read) go out as one frame, at the end of
   * that turn. This saves a frame, a syscall and a parse per token without delaying anything.
   */
  preview(delta: DeltaEvent): void {
    const pending = this.pendingDelta;
    if (pending && sameStream(pending, delta)) {
      pending.delta += delta.delta;
    } else {
      this.flushDelta();
      this.pendingDelta = { ...delta };
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      // A preview must not overtake a logged event that is still being stored.
      if (this.queued === 0) this.flushDelta();
      else void this.enqueue(async () => this.flushDelta()).catch(() => undefined);
    });
  }

  progress(event: ToolProgressEvent): void {
    void this.enqueue(async () => {
      this.flushDelta();
      this.sendToAll(event);
    }).catch(() => undefined);
  }

  private flushDelta(): void {
    const pending = this.pendingDelta;
    if (!pending) return;
    this.pendingDelta = undefined;
    this.sendToAll(pending);
  }

  /** Tells every connected client about a failure that belongs to no one message (not logged). */
  broadcastError(error: ErrorEvent): void {
    this.flushDelta();
    this.sendToAll(error);
  }

  /** Sends a message that is not part of the log (a change in the tool list) to every connected client. */
  broadcast(message: ToolsChangedEvent): void {
    this.sendToAll(message);
  }

  /** Replays the events after `afterSeq` to the connection, then keeps it informed live. */
  attach(connection: ClientConnection, afterSeq: number): Promise<void> {
    return this.enqueue(async () => {
      const events = await this.store.listEvents(this.sessionId, afterSeq);
      for (const event of events) connection.send(event);
      this.connections.add(connection);
    });
  }

  detach(connection: ClientConnection): void {
    this.connections.delete(connection);
  }

  private sendToAll(message: DeltaEvent | ErrorEvent | LoggedEvent | ToolsChangedEvent | ToolProgressEvent): void {
    for (const connection of this.connections) connection.send(message);
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    this.queued++;
    const result = this.tail.then(task).finally(() => this.queued--);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

function sameStream(a: DeltaEvent, b: DeltaEvent): boolean {
  return (
    a.type === b.type &&
    a.run_id === b.run_id &&
    ('update_type' in a ? a.update_type : undefined) === ('update_type' in b ? b.update_type : undefined) &&
    ('step' in a ? a.step : undefined) === ('step' in b ? b.step : undefined)
  );
}
