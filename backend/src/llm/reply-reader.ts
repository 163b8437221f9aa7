import { ModelError } from '../errors.ts';
import { completionAsChunk, ReplyAssembler } from './reply-assembler.ts';
import { type BodyReadOptions, readBoundedText, type ResponseBody, serverSentEvents } from './response-body.ts';

/** How a Chat Completions reply may be read. */
export interface ReplyReadOptions extends BodyReadOptions {
  /** The most characters of one reply (text and tool calls together) that are kept. */
  maxOutputChars: number;
}

/** Room for the JSON around a reply: ids, roles, usage, finish reasons. */
const ENVELOPE_BYTES = 64 * 1024;
/** A character of a JSON string takes at most six bytes (\uXXXX), so a reply under the cap always fits. */
const BYTES_PER_CHAR = 6;

/**
 * Reads a streamed reply event by event until it finishes or passes the output cap; `onDelta`
 * gets its text as it comes, never past the cap. Leaving early (finished, cut or failed)
 * cancels the body, which closes the connection.
 */
export async function readStreamedReply(
  body: ResponseBody,
  options: ReplyReadOptions,
  onDelta: (delta: string) => void,
): Promise<ReplyAssembler> {
  const assembler = new ReplyAssembler(options.maxOutputChars);
  const events = serverSentEvents(body, { ...options, maxEventChars: maxReplyBytes(options), tooLarge: () => tooLarge(options) });
  for await (const event of events) {
    if (event.data === '[DONE]') break;
    const chunk = parseJson(event.data, 'The model endpoint sent a malformed stream event');
    const reported = typeof chunk === 'object' && chunk !== null ? (chunk as { error?: unknown }).error : undefined;
    if (event.event === 'error' || reported) {
      // What the endpoint said goes to the logs (detail), not to users.
      const detail = describeError(reported).replace(/^: /, '');
      throw new ModelError('The model endpoint reported an error in its stream', { retryable: true, ...(detail ? { detail } : {}) });
    }
    const delta = assembler.add(chunk);
    if (delta) onDelta(delta);
    if (assembler.truncated) return assembler;
  }
  if (!assembler.finished) {
    // A cut connection can end an event stream quietly; only a finish_reason says the model finished.
    throw new ModelError('The model stream ended before the model finished', { retryable: true });
  }
  return assembler;
}

/**
 * Reads a reply sent whole, up to a byte limit that any reply under the output cap fits in;
 * a larger body is refused (not retried, the next one would be as large) and not read further.
 */
export async function readWholeReply(body: ResponseBody, options: ReplyReadOptions): Promise<ReplyAssembler> {
  const text = await readBoundedText(body, { ...options, maxBytes: maxReplyBytes(options), tooLarge: () => tooLarge(options) });
  const assembler = new ReplyAssembler(options.maxOutputChars);
  assembler.add(completionAsChunk(parseJson(text, 'The model endpoint sent a malformed response')));
  return assembler;
}

function maxReplyBytes(options: ReplyReadOptions): number {
  return options.maxOutputChars * BYTES_PER_CHAR + ENVELOPE_BYTES;
}

function tooLarge(options: ReplyReadOptions): ModelError {
  return new ModelError(
    `The model's reply was larger than ${maxReplyBytes(options).toLocaleString('en-US')} bytes, more than ` +
      `${options.maxOutputChars.toLocaleString('en-US')} characters can take (LLM_MAX_OUTPUT_CHARS)`,
  );
}

function parseJson(text: string, failure: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ModelError(failure, { retryable: true, cause: error });
  }
}

/** ": message" from an error object an endpoint sent, shortened; empty when it has none. */
function describeError(reported: unknown): string {
  const message = typeof reported === 'object' && reported !== null ? (reported as { message?: unknown }).message : reported;
  if (typeof message !== 'string' || !message) return '';
  return `: ${message.length > 300 ? `${message.slice(0, 300)}…` : message}`;
}
