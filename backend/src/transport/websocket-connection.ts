import type { Duplex } from 'node:stream';
import type { ServerEvent } from '@stepwise/shared-types';
import { WebSocket } from 'ws';
import type { ClientConnection } from '../chat/client-connection.ts';
import type { Config } from '../config/config.ts';

/** How far behind a client may fall: the socket's unsent bytes, and for how long they may stay above that. */
export type BackpressureLimits = Pick<Config['limits'], 'socketMaxBufferedBytes' | 'slowSocketTimeoutMs' | 'socketBatchMs'>;

/** "Try again later": the client read too slowly. It may rejoin with `after_seq` and lose nothing. */
const TOO_SLOW = 1013;
/** Most bytes of one turn's messages held back to go out in one write. */
const CORK_BYTES = 16 * 1024;

/** A run's progress, which may wait a few milliseconds to go out with what follows it. */
const PROGRESS_TYPES = new Set(['assistant_delta', 'tool_progress', 'tool_start', 'tool_complete', 'tool_error']);
/** The updates a person waits on, or that end a run: these go out at once, with whatever waits before them. */
const PROMPT_UPDATES = new Set([
  'agent_request_input',
  'agent_request_input_timeout',
  'agent_parked',
  'agent_input_received',
  'agent_stopped',
  'agent_error',
  'agent_completion',
]);

/**
 * True for an agent run's progress (its steps, deltas, tools), false for what ends a run, asks or
 * answers a person, or is not a run's (no `run_id`: plain chat, answers to a client's command).
 */
export function mayWait(message: ServerEvent): boolean {
  if (!('run_id' in message) || message.run_id === undefined) return false;
  if (message.type === 'agent_update') return !PROMPT_UPDATES.has(message.update_type);
  return PROGRESS_TYPES.has(message.type);
}

/**
 * The ClientConnection port on a `ws` socket, with bounded memory: a client whose unsent bytes stay
 * above the limit for the slow-socket timeout, or that falls twice as far behind, is closed.
 * Messages sent in one turn of the event loop (the events of one commit, say) leave in one write:
 * the connection's own TCP socket is corked from the first of them to the turn's end, so they cost
 * one system call and go out in as few packets as fit, each still a frame of its own. At most 16 KiB
 * (a quarter of the limit, if less) is held so: a larger turn goes out as it is sent.
 *
 * A run's progress is paced, too: a write goes out at most once per `socketBatchMs` while a run sends
 * steps faster than that (the first after a pause leaves at once), so a fast run's steps cost a
 * write per batch rather than one per step. Whatever ends a run, asks a person or answers one
 * (see `mayWait`) goes out at the end of its turn, and takes what waits before it along, in order.
 */
export class WebSocketConnection implements ClientConnection {
  private slowTimer: NodeJS.Timeout | undefined;
  private readonly drainWaiters = new Set<() => void>();
  /** The unsent bytes when the TCP socket was corked; undefined when it is not. */
  private corkedAt: number | undefined;
  /** Most bytes held corked in a turn: a quarter of the limit, at most 16 KiB. */
  private readonly corkLimit: number;
  /** When the socket was last uncorked (performance.now()). */
  private flushedAt = Number.NEGATIVE_INFINITY;
  /** The uncork at the end of this turn is queued. */
  private flushQueued = false;
  /** A paced uncork is due (progress sent within `socketBatchMs` of the last write). */
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly limits: BackpressureLimits,
    /** The TCP socket under `socket` (the upgraded request's), corked while a turn's messages are written. */
    private readonly stream?: Duplex,
  ) {
    this.corkLimit = Math.min(CORK_BYTES, Math.floor(limits.socketMaxBufferedBytes / 4));
    socket.once('close', () => {
      clearTimeout(this.flushTimer);
      this.stopSlowTimer();
      this.wakeWaiters();
    });
  }

  get congested(): boolean {
    return this.socket.bufferedAmount > this.limits.socketMaxBufferedBytes;
  }

  get closed(): boolean {
    return this.socket.readyState !== WebSocket.OPEN;
  }

  send(message: ServerEvent): void {
    if (this.closed) return;
    const wasCongested = this.congested;
    // Encoded first: a message that cannot be encoded throws before the socket is corked, not after.
    const text = JSON.stringify(message);
    this.cork();
    this.socket.send(text, this.afterWrite);
    if (this.corkedAt !== undefined) {
      // A turn that sends much goes out as it goes: corking pays for small frames, and held bytes must not make a client look behind.
      if (this.socket.bufferedAmount - this.corkedAt > this.corkLimit) this.uncork();
      else this.scheduleFlush(mayWait(message));
    }
    this.watch(wasCongested);
  }

  close(code: number, reason: string): void {
    // The close frame goes out behind what is held, not held with it.
    this.uncork();
    if (!this.closed) this.socket.close(code, reason);
  }

  whenDrained(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.congested || this.closed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        this.drainWaiters.delete(done);
        signal?.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        this.drainWaiters.delete(done);
        reject(signal!.reason);
      };
      this.drainWaiters.add(done);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }

  /** Corks the TCP socket, if it is not already: what the code running now sends goes out in one write. */
  private cork(): void {
    if (this.corkedAt !== undefined || !this.stream || this.stream.destroyed) return;
    this.corkedAt = this.socket.bufferedAmount;
    this.stream.cork();
  }

  /** Uncorks at this turn's end (the next tick), or, for progress within `socketBatchMs` of the last write, when that time is up. */
  private scheduleFlush(progress: boolean): void {
    if (this.flushQueued) return;
    const wait = progress ? this.flushedAt + this.limits.socketBatchMs - performance.now() : 0;
    if (wait > 0) {
      if (this.flushTimer === undefined) {
        this.flushTimer = setTimeout(this.uncork, wait);
        this.flushTimer.unref();
      }
      return;
    }
    this.flushQueued = true;
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    this.flushQueued = false;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.corkedAt === undefined) return;
    this.corkedAt = undefined;
    this.flushedAt = performance.now();
    this.stream!.uncork();
  };

  /** Every message written out to the network is a chance to see the client caught up. */
  private readonly afterWrite = (): void => {
    if ((this.slowTimer || this.drainWaiters.size > 0) && !this.congested) {
      this.stopSlowTimer();
      this.wakeWaiters();
    }
  };

  private watch(wasCongested: boolean): void {
    const buffered = this.socket.bufferedAmount;
    const limit = this.limits.socketMaxBufferedBytes;
    // One large message may go over on its own; a client that was already behind and is now this
    // far behind is not reading at all, and waiting would only pile up more.
    if (wasCongested && buffered > 2 * limit) return this.closeTooSlow();
    if (buffered <= limit || this.slowTimer) return;
    this.slowTimer = setTimeout(() => {
      this.slowTimer = undefined;
      if (this.congested) this.closeTooSlow();
    }, this.limits.slowSocketTimeoutMs);
    this.slowTimer.unref();
  }

  private closeTooSlow(): void {
    this.stopSlowTimer();
    this.uncork();
    // The close frame queues behind the unsent data; `ws` destroys the socket if it never gets through.
    this.socket.close(TOO_SLOW, 'Too slow: fell behind the session');
    this.wakeWaiters();
  }

  private stopSlowTimer(): void {
    clearTimeout(this.slowTimer);
    this.slowTimer = undefined;
  }

  private wakeWaiters(): void {
    for (const waiter of [...this.drainWaiters]) waiter();
  }
}
