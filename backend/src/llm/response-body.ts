import { ModelError } from '../errors.ts';
import { abortReason } from '../util/abort.ts';

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
 * reason, cancels the body, which closes the connection: the endpoint sees the request aborted.
 */
export async function* bodyChunks(body: ReadableStream<Uint8Array>, options: BodyReadOptions): AsyncGenerator<Uint8Array> {
  const { signal, idleTimeoutMs } = options;
  const reader = body.getReader();
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
  body: ReadableStream<Uint8Array>,
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
  body: ReadableStream<Uint8Array>,
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
 * A fetch whose error responses (4xx, 5xx) carry at most `maxBytes` of body: the SDK reads an
 * error body whole before it reports the status, and only the first lines of it are ever shown.
 */
export function fetchWithBoundedErrorBodies(maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.ok || !response.body) return response;
    return new Response(firstBytes(response.body, maxBytes), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** The first `maxBytes` of a body; the rest is cancelled, which closes the connection. */
function firstBytes(body: ReadableStream<Uint8Array>, maxBytes: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let left = maxBytes;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      if (value.byteLength < left) {
        left -= value.byteLength;
        return controller.enqueue(value);
      }
      controller.enqueue(value.subarray(0, left));
      controller.close();
      await reader.cancel().catch(() => undefined);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** A duration for messages: "0.3 s", "60 s". */
export function seconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toFixed(3))} s`;
}
