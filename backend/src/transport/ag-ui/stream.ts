import type { ServerResponse } from 'node:http';
import type { BaseEvent } from '@ag-ui/core';
import type { EventEncoder } from '@ag-ui/encoder';
import type { BackpressureLimits } from '../websocket-connection.ts';

/** How long a stream may stay silent before a comment keeps proxies from closing it. */
const KEEPALIVE_MS = 15_000;

/** The HTTP response as a stream of encoded AG-UI events; written to only once it is open. */
export class AgUiStream {
  private readonly buffered: BaseEvent[] = [];
  private opened = false;
  private ending = false;
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    private readonly raw: ServerResponse,
    private readonly encoder: EventEncoder,
    private readonly limits: BackpressureLimits,
  ) {}

  get closed(): boolean {
    return this.raw.writableEnded || this.raw.destroyed;
  }

  get congested(): boolean {
    return this.raw.writableLength > this.limits.socketMaxBufferedBytes;
  }

  open(): void {
    this.opened = true;
    this.raw.writeHead(200, {
      'content-type': this.encoder.getContentType(),
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    for (const event of this.buffered.splice(0)) this.write(event);
    if (this.ending) return void this.raw.end();
    if (this.encoder.getContentType().startsWith('text/event-stream')) {
      this.keepalive = setInterval(() => this.raw.write(': keepalive\n\n'), KEEPALIVE_MS);
      this.keepalive.unref();
    }
  }

  write(event: BaseEvent): void {
    if (!this.opened) {
      this.buffered.push(event);
      return;
    }
    if (this.closed) return;
    this.raw.write(this.encoder.encodeBinary(event));
    // A client that reads nothing at all is cut off rather than buffered without end.
    if (this.raw.writableLength > 2 * this.limits.socketMaxBufferedBytes) this.raw.destroy();
  }

  /** Ends the response after what was written (at once, or as soon as it opens). */
  end(): void {
    this.ending = true;
    clearInterval(this.keepalive);
    if (this.opened && !this.closed) this.raw.end();
  }

  whenDrained(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (!this.congested || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.raw.off('drain', done);
        this.raw.off('close', done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.raw.on('drain', done);
      this.raw.on('close', done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
