import type { ServerEvent } from '@stepwise/shared-types';
import { WebSocket } from 'ws';
import type { ClientConnection } from '../chat/client-connection.ts';
import type { Config } from '../config/config.ts';

/** How far behind a client may fall: the socket's unsent bytes, and for how long they may stay above that. */
export type BackpressureLimits = Pick<Config['limits'], 'socketMaxBufferedBytes' | 'slowSocketTimeoutMs'>;

/** "Try again later": the client read too slowly. It may rejoin with `after_seq` and lose nothing. */
const TOO_SLOW = 1013;

/**
 * The ClientConnection port on a `ws` socket, with bounded memory: a client whose unsent bytes stay
 * above the limit for the slow-socket timeout, or that falls twice as far behind, is closed.
 */
export class WebSocketConnection implements ClientConnection {
  private slowTimer: NodeJS.Timeout | undefined;
  private readonly drainWaiters = new Set<() => void>();

  constructor(
    private readonly socket: WebSocket,
    private readonly limits: BackpressureLimits,
  ) {
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
    this.socket.send(JSON.stringify(message), this.afterWrite);
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
