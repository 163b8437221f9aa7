import type { Duplex } from 'node:stream';
import type { ServerEvent } from '@stepwise/shared-types';
import { WebSocket } from 'ws';
import type { ClientConnection } from '../chat/client-connection.ts';
import type { Config } from '../config/config.ts';

/** How far behind a client may fall: the socket's unsent bytes, and for how long they may stay above that. */
export type BackpressureLimits = Pick<Config['limits'], 'socketMaxBufferedBytes' | 'slowSocketTimeoutMs'>;

/** "Try again later": the client read too slowly. It may rejoin with `after_seq` and lose nothing. */
const TOO_SLOW = 1013;
/** Most bytes of one turn's messages held back to go out in one write. */
const CORK_BYTES = 16 * 1024;

/**
 * The ClientConnection port on a `ws` socket, with bounded memory: a client whose unsent bytes stay
 * above the limit for the slow-socket timeout, or that falls twice as far behind, is closed.
 * Messages sent in one turn of the event loop (the events of one commit, say) leave in one write:
 * the connection's own TCP socket is corked from the first of them to the turn's end, so they cost
 * one system call and go out in as few packets as fit, each still a frame of its own. At most 16 KiB
 * (a quarter of the limit, if less) is held so: a larger turn goes out as it is sent.
 */
export class WebSocketConnection implements ClientConnection {
  private slowTimer: NodeJS.Timeout | undefined;
  private readonly drainWaiters = new Set<() => void>();
  /** The unsent bytes when the TCP socket was corked; undefined when it is not. */
  private corkedAt: number | undefined;
  /** Most bytes held corked in a turn: a quarter of the limit, at most 16 KiB. */
  private readonly corkLimit: number;

  constructor(
    private readonly socket: WebSocket,
    private readonly limits: BackpressureLimits,
    /** The TCP socket under `socket` (the upgraded request's), corked while a turn's messages are written. */
    private readonly stream?: Duplex,
  ) {
    this.corkLimit = Math.min(CORK_BYTES, Math.floor(limits.socketMaxBufferedBytes / 4));
    socket.once('close', () => {
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
    this.cork();
    this.socket.send(JSON.stringify(message), this.afterWrite);
    // A turn that sends much goes out as it goes: corking pays for small frames, and held bytes must not make a client look behind.
    if (this.corkedAt !== undefined && this.socket.bufferedAmount - this.corkedAt > this.corkLimit) this.uncork();
    this.watch(wasCongested);
  }

  close(code: number, reason: string): void {
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

  /** Corks the TCP socket, if it is not already, until this turn's end (the next tick): what the code running now sends goes out in one write. */
  private cork(): void {
    if (this.corkedAt !== undefined || !this.stream || this.stream.destroyed) return;
    this.corkedAt = this.socket.bufferedAmount;
    this.stream.cork();
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    if (this.corkedAt === undefined) return;
    this.corkedAt = undefined;
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
