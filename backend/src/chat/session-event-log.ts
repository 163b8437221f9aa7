import type {
  DeltaEvent,
  ErrorEvent,
  LoggedEvent,
  LoggedEventBody,
  MessageCancelled,
  MessageQueued,
  SessionDeletedEvent,
  ToolProgressEvent,
  ToolsChangedEvent,
  ModelHealthEvent,
  SettingsChangedEvent,
} from '@stepwise/shared-types';
import type { EventSink } from '../agent/kernel/event-sink.ts';
import type { Store } from '../store/store.ts';
import type { ClientConnection } from './client-connection.ts';
import { RUN_ENDINGS } from './run-endings.ts';

/** How many logged events a replay reads from the store at a time. */
// Small enough that a page of the largest replies (LLM_MAX_OUTPUT_CHARS each) stays in the tens of MB.
const REPLAY_PAGE_SIZE = 100;

/** Sees each event a session logs here, once it is stored. */
export type EventObserver = (event: LoggedEvent, sessionId: string) => void;

/**
 * A session's event log and its live audience. Every event gets the next `seq` when it is emitted,
 * is stored, and only then goes to the connected clients (write-ahead). Storing does not hold up
 * the run: an event's write starts at once and joins the store's next group commit, with the
 * journal entry made before it, while the run goes on. One queue orders the sending, each event
 * once it is stored, and a client that joins mid-run enters the audience inside it, so it sees
 * every event once, in order.
 */
export class SessionEventLog implements EventSink {
  private readonly connections = new Set<ClientConnection>();
  /** Connections still replaying the log; they join `connections` once they have caught up. */
  private readonly joining = new Set<ClientConnection>();
  /** Connections that missed part of a preview stream: they get no previews until the next logged event. */
  private readonly skippingPreviews = new Set<ClientConnection>();
  private tail: Promise<unknown> = Promise.resolve();
  private queued = 0;
  /** The highest `seq` given to an event (stored and sent, or on its way); `seq` is the highest sent. */
  private assigned: number;
  /** Seqs of this log's events being stored and not yet sent (nor failed). */
  private readonly inFlight = new Set<number>();
  /** An event that could not be stored, told to the next `emit` or `flush`. */
  private failure: { error: unknown } | undefined;
  /** Deltas of one stream that arrived in the same turn of the event loop, sent as one. */
  private pendingDelta: DeltaEvent | undefined;
  private flushScheduled = false;
  /** Runs whose response_complete is logged or queued: nothing of theirs may follow it. */
  private readonly endedRuns = new Set<string>();
  /** Runs whose ending (agent_completion, agent_stopped or agent_error) is logged or queued. */
  private readonly endingRuns = new Set<string>();
  /** response_complete events emitted (or queued) by this log. */
  private completed = 0;

  constructor(
    private readonly sessionId: string,
    private readonly store: Store,
    private seq: number,
    /** Sees each event this instance logs, once it is stored (metrics). */
    private readonly observe?: EventObserver,
  ) {
    this.assigned = seq;
  }

  /** Called after each event this instance logged (several instances: tell the others). */
  onAppended: (() => void) | undefined;

  /** Called with each preview this instance sends, and the seq its sockets had then (several instances: pass it on). */
  onPreview: ((delta: DeltaEvent, afterSeq: number) => void) | undefined;

  /** A relayed preview stream with a hole in it (one came while this log was behind): the rest of it is not relayed. */
  private relayHole: DeltaEvent | undefined;

  /**
   * A preview from the instance that runs the session's run (several instances). It is sent on
   * only while this log is exactly where that instance's was when it sent it: a preview must
   * neither overtake a logged event this log has not read yet nor come after the event it leads
   * to. A stream that missed a preview is not relayed further (it would read as garbled text);
   * its full event replaces it.
   */
  relayPreview(delta: DeltaEvent, afterSeq: number): void {
    if (this.relayHole && sameStream(this.relayHole, delta)) return;
    this.relayHole = undefined;
    if (afterSeq !== this.seq || this.queued > 0) {
      this.relayHole = delta;
      return;
    }
    for (const connection of this.connections) this.sendPreview(connection, delta);
  }

  /**
   * Catches up with what another instance logged in this session (several instances): reads the
   * events after the last one known from the store and sends them on, in order, in the queue.
   */
  syncFromStore(): Promise<void> {
    return this.enqueue(async () => {
      for (;;) {
        const events = await this.store.listEvents(this.sessionId, this.seq, 500);
        for (const event of events) {
          // This instance's own events on their way are sent by their own turn in the queue.
          if (event.seq <= this.seq || this.inFlight.has(event.seq)) continue;
          this.seq = event.seq;
          this.assigned = Math.max(this.assigned, event.seq);
          if (event.type === 'response_complete' && event.run_id) this.endedRuns.add(event.run_id);
          for (const connection of this.connections) connection.send(event);
        }
        if (events.length < 500) return;
      }
    });
  }

  /** The highest `seq` logged and sent so far (after `flush`, of every event emitted). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Connected clients, counting those still replaying the log. */
  get connectionCount(): number {
    return this.connections.size + this.joining.size;
  }

  /** Whether the run's response_complete is logged, or queued to be (so anything emitted now comes after it). */
  hasEnded(runId: string): boolean {
    return this.endedRuns.has(runId);
  }

  /**
   * Whether the run's ending is logged, or queued to be: its clients may have seen the run end
   * (an AG-UI stream finishes on it), while the server still saves the run's outcome before its
   * response_complete.
   */
  hasEnding(runId: string): boolean {
    return this.endingRuns.has(runId);
  }

  /** How many response_complete events this log has emitted (or queued): a response ended when it grew. */
  get completions(): number {
    return this.completed;
  }

  /**
   * Logs an event for a run: it has its place at once and is stored and sent while the run goes
   * on. A write that failed is told to the run at its next emit or flush (after this event is
   * queued, so an ending is never dropped for an earlier failure).
   */
  emit(body: LoggedEventBody): Promise<void> {
    this.deliver(body).catch((error: unknown) => {
      this.failure ??= { error };
    });
    const failure = this.takeFailure();
    return failure ? Promise.reject(failure.error) : Promise.resolve();
  }

  /** Logs an event and resolves once it is stored and sent, rejecting when it could not be stored (what is logged outside runs). */
  record(body: LoggedEventBody): Promise<void> {
    return this.deliver(body);
  }

  /** Resolves once every event emitted so far is stored and sent; rejects with a run's write that failed since it last heard. */
  async flush(): Promise<void> {
    await this.sent();
    const failure = this.takeFailure();
    if (failure) throw failure.error;
  }

  /** Resolves once every event emitted so far is stored (or failed) and sent. */
  async sent(): Promise<void> {
    await this.enqueue(async () => undefined);
  }

  /**
   * Gives the event the next seq, starts its write and queues its sending: stored before it is
   * sent, sent in order, after the previews that came before it. Resolves once it was sent;
   * rejects when it could not be stored (then nothing of it is sent).
   */
  private deliver(body: LoggedEventBody): Promise<void> {
    if (body.type === 'response_complete') this.completed++;
    if (body.type === 'response_complete' && body.run_id) this.endedRuns.add(body.run_id);
    if (body.type === 'agent_update' && body.run_id && RUN_ENDINGS.has(body.update_type)) this.endingRuns.add(body.run_id);
    const event = { ...body, seq: ++this.assigned, ts: new Date().toISOString() } as LoggedEvent;
    this.inFlight.add(event.seq);
    const stored = this.store.appendEvent(this.sessionId, event);
    stored.catch(() => undefined); // handled in its turn below
    // The previews so far lead to this event: they go out just before it, not with a later one.
    const previews = this.takeDelta();
    return this.enqueue(async () => {
      try {
        await stored;
      } finally {
        this.inFlight.delete(event.seq);
      }
      if (previews) this.sendDelta(previews);
      this.seq = event.seq;
      this.onAppended?.();
      this.observe?.(event, this.sessionId);
      for (const connection of this.connections) {
        this.skippingPreviews.delete(connection);
        connection.send(event);
      }
    });
  }

  private takeFailure(): { error: unknown } | undefined {
    const failure = this.failure;
    this.failure = undefined;
    return failure;
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
      this.releaseDelta();
      this.pendingDelta = { ...delta };
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.releaseDelta();
    });
  }

  progress(event: ToolProgressEvent): void {
    const previews = this.takeDelta();
    void this.enqueue(async () => {
      if (previews) this.sendDelta(previews);
      // Progress is only a hint (the tool's own events follow): a client that is behind goes without.
      for (const connection of this.connections) if (!connection.congested) connection.send(event);
    }).catch(() => undefined);
  }

  /** Sends the previews gathered so far now, or, while logged events are on their way, after them. */
  private releaseDelta(): void {
    const previews = this.takeDelta();
    if (!previews) return;
    // A preview must not overtake a logged event that is still being stored.
    if (this.queued === 0) this.sendDelta(previews);
    else void this.enqueue(async () => this.sendDelta(previews)).catch(() => undefined);
  }

  private takeDelta(): DeltaEvent | undefined {
    const pending = this.pendingDelta;
    this.pendingDelta = undefined;
    return pending;
  }

  /** Sends previews to every client (and to the other instances, with the seq the sockets have now). */
  private sendDelta(previews: DeltaEvent): void {
    for (const connection of this.connections) this.sendPreview(connection, previews);
    this.onPreview?.(previews, this.seq);
  }

  /** Sends the previews gathered so far at once (before a message outside the log). */
  private flushDelta(): void {
    const previews = this.takeDelta();
    if (previews) this.sendDelta(previews);
  }

  /**
   * A client that is behind gets no previews: they would only pile up before the logged events it
   * needs. It skips the rest of the stream too, since a preview with a hole in it reads as garbled
   * text; the full event that follows replaces it anyway.
   */
  private sendPreview(connection: ClientConnection, delta: DeltaEvent): void {
    if (this.skippingPreviews.has(connection)) return;
    if (connection.congested) this.skippingPreviews.add(connection);
    else connection.send(delta);
  }

  /** Tells every connected client about a failure that belongs to no one message (not logged). */
  broadcastError(error: ErrorEvent): void {
    this.flushDelta();
    this.sendToAll(error);
  }

  /**
   * Says goodbye to every client, replaying or live, and closes them: the session was deleted.
   * Nothing is logged any more (the log is gone with the session).
   */
  closeAll(message: SessionDeletedEvent, code: number, reason: string): void {
    this.flushDelta();
    for (const connection of [...this.connections, ...this.joining]) {
      connection.send(message);
      connection.close(code, reason);
    }
    this.connections.clear();
    this.joining.clear();
  }

  /** Sends a message that is not part of the log (a change in the tool list) to every connected client. */
  broadcast(message: ToolsChangedEvent | ModelHealthEvent | SettingsChangedEvent | MessageQueued | MessageCancelled): void {
    this.sendToAll(message);
  }

  /**
   * Replays the events after `afterSeq` to the connection, then keeps it informed live. The replay
   * reads the store a page at a time and sends only as fast as the client takes events in, outside
   * the queue, so a slow client holds up neither the session's runs nor its other clients. Inside the
   * queue, where nothing is being logged, it sends what was logged meanwhile and joins the audience.
   * Resolves early, without joining, when the connection closes.
   */
  async attach(connection: ClientConnection, afterSeq: number): Promise<void> {
    const cursor = { seq: afterSeq };
    this.joining.add(connection);
    try {
      let done = false;
      while (!done && !connection.closed) {
        await this.replay(connection, cursor);
        if (!connection.closed) done = await this.enqueue(() => this.join(connection, cursor));
      }
    } finally {
      this.joining.delete(connection);
    }
  }

  detach(connection: ClientConnection): void {
    this.connections.delete(connection);
    this.skippingPreviews.delete(connection);
  }

  /** Sends the stored events after the cursor, page by page, waiting while the client is behind. */
  private async replay(connection: ClientConnection, cursor: { seq: number }): Promise<void> {
    for (;;) {
      const page = await this.store.listEvents(this.sessionId, cursor.seq, REPLAY_PAGE_SIZE);
      for (const event of page) {
        // Stored but not yet sent live: its own turn in the queue sends it, once the connection has joined.
        if (event.seq > this.seq) return;
        if (connection.congested) await connection.whenDrained();
        if (connection.closed) return;
        connection.send(event);
        cursor.seq = event.seq;
      }
      if (page.length < REPLAY_PAGE_SIZE) break;
    }
    // The client takes in what it has before joining, so the queue does not wait on it.
    if (connection.congested) await connection.whenDrained();
  }

  /**
   * Runs in the queue: sends the events logged since the replay's last page and adds the connection
   * to the live audience (true). When more than a page came in meanwhile, it leaves that to another
   * round of replay (false), so that the queue never waits for a slow client.
   */
  private async join(connection: ClientConnection, cursor: { seq: number }): Promise<boolean> {
    if (connection.closed) return true;
    if (this.seq - cursor.seq > REPLAY_PAGE_SIZE) return false;
    if (this.seq > cursor.seq) {
      for (const event of await this.store.listEvents(this.sessionId, cursor.seq, REPLAY_PAGE_SIZE)) if (event.seq <= this.seq) connection.send(event);
    }
    this.connections.add(connection);
    return true;
  }

  private sendToAll(message: ErrorEvent | ToolsChangedEvent | ModelHealthEvent | SettingsChangedEvent | MessageQueued | MessageCancelled): void {
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
