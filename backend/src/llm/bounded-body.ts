import type { Dispatcher } from 'undici';
import { ModelError } from '../errors.ts';

/** Only the first bytes of an error body are ever read; the rest is not. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Room for the JSON around a reply: ids, roles, usage, finish reasons. */
export const ENVELOPE_BYTES = 64 * 1024;

/** A character of a JSON string takes at most six bytes (\uXXXX), so a reply under the cap always fits. */
export const BYTES_PER_CHAR = 6;

/** What the body of a model response may cost before it is refused. */
export interface BodyLimits {
  /** Longest silence between two chunks of a successful response's body. */
  idleTimeoutMs: number;
  /** LLM_MAX_OUTPUT_CHARS: sets the largest whole reply and the longest line of a stream. */
  maxOutputChars: number;
}

/** The longest whole reply, in bytes, that LLM_MAX_OUTPUT_CHARS allows. */
export function maxReplyBytes(maxOutputChars: number): number {
  return maxOutputChars * BYTES_PER_CHAR + ENVELOPE_BYTES;
}

/** The error for a reply larger than LLM_MAX_OUTPUT_CHARS allows (not retried: the next would be as large). */
export function replyTooLarge(maxOutputChars: number): ModelError {
  return new ModelError(
    `The model's reply was larger than ${maxReplyBytes(maxOutputChars).toLocaleString('en-US')} bytes, more than ` +
      `${maxOutputChars.toLocaleString('en-US')} characters can take (LLM_MAX_OUTPUT_CHARS)`,
  );
}

/**
 * A response body read chunk by chunk, bounded: it fails with a retryable ModelError after
 * `idleTimeoutMs` of silence (the clock runs only while a read waits for the endpoint), a
 * whole reply larger than LLM_MAX_OUTPUT_CHARS allows and a stream event longer than that are
 * refused before more is buffered, and an error body is cut at 64 KiB. Refusing or stalling
 * destroys the body, which closes the connection (the endpoint sees the request aborted). Let go
 * of before its end (the SDK does so after `[DONE]`), the rest is read off and dropped so the
 * connection serves the next call, unless the request was aborted or the rest is long or slow.
 */
export class BoundedBody implements AsyncIterableIterator<Uint8Array> {
  private readonly maxBytes: number;
  private readonly eventBoundary = new EventBoundary();
  private bytes = 0;
  private failure: Error | undefined;
  /** The endpoint's end was read. */
  private ended = false;
  /** An error body was cut: nothing more is handed out. */
  private cut = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: Dispatcher.ResponseData['body'],
    private readonly ok: boolean,
    private readonly streamed: boolean,
    private readonly limits: BodyLimits,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.maxBytes = ok ? maxReplyBytes(limits.maxOutputChars) : MAX_ERROR_BODY_BYTES;
    const wake = this.wakeReader;
    stream.on('readable', wake);
    stream.on('end', () => {
      this.ended = true;
      wake();
    });
    stream.on('error', (error: Error) => {
      this.failure ??= error;
      clearTimeout(this.timer);
      wake();
    });
    stream.on('close', wake);
  }

  /** Resumes a read waiting for the endpoint. */
  private readonly wakeReader = () => {
    const waiting = this.wake;
    this.wake = undefined;
    waiting?.();
  };

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      if (this.cut) return { value: undefined, done: true };
      if (this.failure) throw this.failure;
      const chunk: Buffer | null = this.stream.read();
      if (chunk !== null) return this.take(chunk);
      if (this.ended || this.stream.destroyed) return this.finish();
      await this.waitForData();
    }
  }

  async return(): Promise<IteratorResult<Uint8Array>> {
    clearTimeout(this.timer);
    if (!this.ended && !this.cut && !this.stream.destroyed) {
      if (this.failure || this.signal?.aborted) this.stream.destroy(this.failure);
      else this.dropRest();
    }
    return { value: undefined, done: true };
  }

  private take(chunk: Buffer): IteratorResult<Uint8Array> {
    if (!this.ok) {
      // An error body: what fits is kept, the rest never read.
      const room = this.maxBytes - this.bytes;
      this.bytes += chunk.byteLength;
      if (chunk.byteLength < room) return { value: chunk, done: false };
      this.cut = true;
      this.stream.destroy();
      return { value: chunk.subarray(0, room), done: false };
    }
    // A stream is read event by event, so only one event must fit; a whole reply must fit whole.
    this.bytes = this.streamed ? this.eventBoundary.bytesOpen(chunk) : this.bytes + chunk.byteLength;
    if (this.bytes > this.maxBytes) throw this.fail(replyTooLarge(this.limits.maxOutputChars));
    return { value: chunk, done: false };
  }

  private finish(): IteratorResult<Uint8Array> {
    clearTimeout(this.timer);
    if (this.ended) return { value: undefined, done: true };
    // Destroyed before its end: by its own error (not yet emitted), or the request was aborted.
    throw this.stream.errored ?? this.signal?.reason ?? new ModelError('The model call failed on the way: the connection broke', { retryable: true });
  }

  private waitForData(): Promise<void> {
    // One clock for the body, set going again at each wait; it fires into nothing between waits.
    if (this.timer) this.timer.refresh();
    else {
      this.timer = setTimeout(() => {
        if (this.wake) this.fail(new ModelError(`The model stream stalled: nothing for ${seconds(this.limits.idleTimeoutMs)}`, { retryable: true }));
      }, this.limits.idleTimeoutMs);
      this.timer.unref();
    }
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  /** Refuses the rest of the body: the connection is closed and every read from now on fails (with the first reason). */
  private fail(reason: Error): Error {
    this.failure ??= reason;
    clearTimeout(this.timer);
    this.stream.destroy(reason);
    return this.failure;
  }

  /**
   * Reads off the little a finished reply may still hold (its last bytes, the end of its
   * chunking): at most 64 KiB more, within the idle timeout, or the connection is closed.
   */
  private dropRest(): void {
    const { stream } = this;
    const idle = setTimeout(() => stream.destroy(), this.limits.idleTimeoutMs);
    idle.unref();
    let room = MAX_ERROR_BODY_BYTES;
    // Without a 'readable' listener the stream flows: what comes is dropped as it comes.
    stream.off('readable', this.wakeReader);
    stream.on('close', () => clearTimeout(idle));
    stream.on('data', (chunk: Buffer) => {
      room -= chunk.byteLength;
      if (room < 0) stream.destroy();
    });
    stream.resume();
  }
}

/** The blank lines that end a server-sent event, however its lines end. */
export const BOUNDARIES = ['\n\n', '\r\r', '\r\n\r\n'] as const;

/**
 * Follows a server-sent event stream chunk by chunk and says how many bytes the event still open
 * holds: its lines are buffered by the SDK's reader until the blank line that ends it, so that is
 * what must stay bounded. A boundary split across two chunks is found too.
 */
export class EventBoundary {
  private open = 0;
  /** The last bytes of the stream so far, for a boundary that began in the previous chunk. */
  private tail = Buffer.alloc(0);

  bytesOpen(chunk: Uint8Array): number {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let end = -1;
    for (const boundary of BOUNDARIES) end = Math.max(end, endOf(bytes, boundary));
    if (end === -1 && this.tail.byteLength) {
      // Only a boundary across the seam is looked for here: the tail alone held none.
      const seam = Buffer.concat([this.tail, bytes.subarray(0, 3)]);
      for (const boundary of BOUNDARIES) {
        const at = endOf(seam, boundary);
        if (at > this.tail.byteLength) end = Math.max(end, at - this.tail.byteLength);
      }
    }
    this.open = end === -1 ? this.open + bytes.byteLength : bytes.byteLength - end;
    this.tail = Buffer.from(bytes.subarray(Math.max(0, bytes.byteLength - 3)));
    return this.open;
  }
}

/** Where the last `needle` in `bytes` ends, or -1. */
export function endOf(bytes: Buffer, needle: string): number {
  const at = bytes.lastIndexOf(needle);
  return at === -1 ? -1 : at + needle.length;
}

/** A duration for messages: "0.3 s", "60 s". */
export function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toFixed(3))} s`;
}
