import type { DeltaEvent, ErrorEvent, LoggedEvent, LoggedEventBody } from '@stepwise/shared-types';
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
      for (const connection of this.connections) connection.send(event);
    });
  }

  preview(delta: DeltaEvent): void {
    // A preview must not overtake a logged event that is still being stored.
    if (this.queued === 0) this.sendToAll(delta);
    else void this.enqueue(async () => this.sendToAll(delta)).catch(() => undefined);
  }

  /** Tells every connected client about a failure that belongs to no one message (not logged). */
  broadcastError(error: ErrorEvent): void {
    this.sendToAll(error);
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

  private sendToAll(message: DeltaEvent | ErrorEvent | LoggedEvent): void {
    for (const connection of this.connections) connection.send(message);
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    this.queued++;
    const result = this.tail.then(task).finally(() => this.queued--);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
