import type { IncomingMessage } from 'node:http';
import { ModelError } from '../errors.ts';
import { abortReason } from '../util/abort.ts';

/** A model response's body, as node:http hands it over (see http-transport.ts). */
export type ResponseBody = IncomingMessage;

/** How a model response body may be read. */
export interface BodyReadOptions {
  /** Aborts the read at once (a user stop, the call's deadline); the read then rejects with its reason. */
  signal: AbortSignal;
  /** Longest silence allowed between two chunks of the body. */
  idleTimeoutMs: number;
}

/** One server-sent event: its type (empty when none was given) and its data lines, joined. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * Yields the body's chunks as they arrive. Rejects with a retryable ModelError when nothing comes
 * for `idleTimeoutMs`, and with the signal's reason when it aborts. Leaving early, for whatever
 * reason, cancels the body, which closes the connection (the endpoint sees the request aborted)
 * unless all of it had already arrived.
 */
export async function* bodyChunks(body: ResponseBody, options: BodyReadOptions): AsyncGenerator<Uint8Array> {
  const { signal, idleTimeoutMs } = options;
  const reader = new BodyReader(body);
  let stopped: Error | undefined;
  // Cancelling ends a pending read() with done; `stopped` then says why.
  const stop = (reason: Error) => {
    stopped ??= reason;
    reader.cancel(reason).catch(() => undefined);
  };
  // The clock counts only while a read waits for the endpoint, not while the caller handles a chunk.
  let waiting = false;
  const timer = setTimeout(() => {
    if (waiting) stop(new ModelError(`The model stream stalled: nothing for ${seconds(idleTimeoutMs)}`, { retryable: true }));
  }, idleTimeoutMs);
  timer.unref();
  const onAbort = () => stop(abortReason(signal));
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let complete = false;
  try {
    for (;;) {
      if (stopped) throw stopped;
      timer.refresh();
      waiting = true;
      let result: Awaited<ReturnType<typeof reader.read>>;
      try {
        result = await reader.read();
      } catch (error) {
        throw stopped ?? error;
      } finally {
        waiting = false;
      }
      if (stopped) throw stopped;
      if (result.done) {
        complete = true;
        return;
      }
      yield result.value;
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    if (!complete) reader.cancel().catch(() => undefined);
  }
}

/** The whole body as text. More than `maxBytes` is refused with `tooLarge()`, and the rest is never read. */
export async function readBoundedText(
  body: ResponseBody,
  options: BodyReadOptions & { maxBytes: number; tooLarge: () => Error },
): Promise<string> {
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  for await (const chunk of bodyChunks(body, options)) {
    bytes += chunk.byteLength;
    if (bytes > options.maxBytes) throw options.tooLarge();
    parts.push(decoder.decode(chunk, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join('');
}

/**
 * The body's server-sent events, in order. One event, or one line, longer than `maxEventChars`
 * is refused with `tooLarge()` before more of it is buffered: the whole body is never held.
 */
export async function* serverSentEvents(
  body: ResponseBody,
  options: BodyReadOptions & { maxEventChars: number; tooLarge: () => Error },
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  const lines = new LineSplitter();
  let event = '';
  let data: string[] = [];
  let dataChars = 0;
  const take = (line: string): ServerSentEvent | undefined => {
    if (line === '') {
      const complete = data.length ? { event, data: data.join('\n') } : undefined;
      event = '';
      data = [];
      dataChars = 0;
      return complete;
    }
    if (line.startsWith(':')) return undefined; // a comment, often a keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
    if (field === 'data') {
      data.push(value);
      dataChars += value.length;
    } else if (field === 'event') {
      event = value;
    }
    return undefined;
  };
  for await (const chunk of bodyChunks(body, options)) {
    for (const line of lines.add(decoder.decode(chunk, { stream: true }))) {
      const complete = take(line);
      if (complete) yield complete;
    }
    if (lines.pendingChars + dataChars > options.maxEventChars) throw options.tooLarge();
  }
  // A body may end without the blank line after its last event.
  for (const line of [...lines.add(decoder.decode()), ...lines.flush(), '']) {
    const complete = take(line);
    if (complete) yield complete;
  }
}

/**
 * Splits text that arrives in pieces into lines ending in \n, \r\n or \r. Each piece is searched
 * once, so a long line arriving in many small pieces costs linear time.
 */
class LineSplitter {
  private parts: string[] = [];
  /** Characters of the line not finished yet. */
  pendingChars = 0;
  /** The last piece ended in \r: a \n starting the next one belongs to the same line break. */
  private afterCarriageReturn = false;

  *add(text: string): Generator<string> {
    let position = 0;
    if (this.afterCarriageReturn && text.startsWith('\n')) position = 1;
    if (text.length) this.afterCarriageReturn = false;
    const lineBreak = /[\r\n]/g;
    while (position < text.length) {
      lineBreak.lastIndex = position;
      const match = lineBreak.exec(text);
      if (!match) {
        this.parts.push(text.slice(position));
        this.pendingChars += text.length - position;
        return;
      }
      const line = this.parts.join('') + text.slice(position, match.index);
      this.parts = [];
      this.pendingChars = 0;
      position = match.index + 1;
      if (match[0] === '\r') {
        if (position === text.length) this.afterCarriageReturn = true;
        else if (text[position] === '\n') position++;
      }
      yield line;
    }
  }

  /** The unfinished last line, if any. */
  flush(): string[] {
    const rest = this.parts.join('');
    this.parts = [];
    this.pendingChars = 0;
    return rest ? [rest] : [];
  }
}

/**
 * Reads a Node stream one chunk at a time, as a web stream's reader does: `read()` resolves with
 * the next chunk or with done, and `cancel()` ends a pending read with done. Cancelling a body that
 * has not fully arrived destroys it, which closes the connection (the endpoint sees the request
 * aborted); one that has (a stream read up to its `[DONE]`) is drained instead, so its keep-alive
 * connection serves the next call.
 */
class BodyReader {
  private ended = false;
  private cancelled = false;
  private released = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private readonly onReadable = () => this.wake?.();
  private readonly onEnd = () => {
    this.ended = true;
    this.wake?.();
  };
  private readonly onError = (error: Error) => {
    this.failure ??= error;
    this.wake?.();
  };
  private readonly onClose = () => {
    if (!this.ended) this.failure ??= new Error('The connection closed before the body ended');
    this.wake?.();
  };

  constructor(private readonly body: ResponseBody) {
    body.on('readable', this.onReadable).on('end', this.onEnd).on('error', this.onError).on('close', this.onClose);
  }

  async read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }> {
    for (;;) {
      if (this.cancelled) return { done: true };
      const chunk = this.body.read() as Buffer | null;
      if (chunk !== null) return { done: false, value: chunk };
      if (this.ended) return this.release({ done: true });
      if (this.failure) throw this.release(this.failure);
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  async cancel(_reason?: unknown): Promise<void> {
    if (this.cancelled) return;
    this.cancelled = true;
    this.release(undefined);
    if (this.body.complete && !this.body.destroyed) this.body.resume();
    else this.body.destroy();
    this.wake?.();
  }

  /** Stops listening (a late error is heard by the listener postJson leaves on every response). */
  private release<T>(value: T): T {
    if (this.released) return value;
    this.released = true;
    this.body.off('readable', this.onReadable).off('end', this.onEnd).off('error', this.onError).off('close', this.onClose);
    return value;
  }
}

/** A duration for messages: "0.3 s", "60 s". */
export function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toFixed(3))} s`;
}
