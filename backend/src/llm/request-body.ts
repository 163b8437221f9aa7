import type { ChatCompletionFunctionTool, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { LlmMessage, LlmToolSchema } from './llm-client.ts';
import { grammarSafe } from './structured-output.ts';

/**
 * A Chat Completions request body as the bytes sent, each message serialised once.
 *
 * A run's calls send the session's history and the run's transcript again and again, growing by a
 * message or two per call. So the JSON of each message is kept beside it (until the message is
 * let go of), and so are the bytes of the last list of messages sent: a call that sends that list
 * again with messages after it copies the runs of those bytes still the same at the same places
 * (all but a phase's own system prompt, say) and encodes only the rest. The history is serialised
 * once per turn, not once per call. What is reused is checked against the messages
 * as they are now (what each was made from, field by field), so a message changed after it was
 * sent, or an equal one in its place, is always sent as it is.
 */
export interface RequestParts {
  /** The fields before the messages (LLM_PARAMS, response_format, model). */
  head: Record<string, unknown>;
  messages: readonly LlmMessage[];
  tools: readonly LlmToolSchema[] | undefined;
  /** The fields after the tools (temperature, stream_options, stream): none of them in `head`. */
  tail: Record<string, unknown>;
}

/**
 * The same body as an object, for the SDK to encode itself: Azure OpenAI's client reads the
 * model from the body to put the deployment in the path.
 */
export function requestObject({ head, messages, tools, tail }: RequestParts): Record<string, unknown> {
  return {
    ...head,
    messages: messages.map(toOpenAiMessage),
    ...(tools?.length ? { tools: tools.map(toOpenAiTool) } : {}),
    ...tail,
  };
}

/** Bytes kept for a message or a tool, with what they were made from: a hit needs all of it unchanged. */
interface Encoded {
  made: readonly unknown[];
  bytes: Buffer;
}

/**
 * The bytes of a list of messages sent (`m1,m2,…`, a view into the body that carried them), where
 * each message's bytes start and end in them, and what each message was made from.
 */
interface SentList {
  made: (readonly unknown[])[];
  starts: Uint32Array;
  ends: Uint32Array;
  bytes: Buffer;
  /** The kept buffer the body was written into, and its use then: a buffer taken again since holds another body. */
  slab: Slab | undefined;
  use: number;
}

/** A buffer kept for large bodies, and how many times it has been taken. */
interface Slab {
  bytes: Buffer;
  uses: number;
}

/**
 * The buffers one client writes its large request bodies into (a long chat's, hundreds of KiB),
 * used again call after call. A new buffer of that size per call costs its page faults, and the
 * memory it adds outside the heap brings the collector's full passes several times as often.
 *
 * A body is lent to its request and given back (`release`) only once a reply to it came whole:
 * the endpoint read the request to its end before it answered, so nothing of it is still waiting
 * to be written. A body that failed, was cut short or was stopped is never given back (the
 * collector has it, as any buffer). A list of messages kept in a buffer is read again by a later
 * call only while the buffer has not been taken since (`SentList.use`), and a body is never
 * written into the buffer its messages are copied from.
 */
export class BodyBuffers {
  /** Bodies smaller than this are made as any buffer: Node pools the small ones, and the rest cost little. */
  readonly minBytes: number;
  /** Buffers kept free at most, and their bytes at most. */
  private readonly maxFree: number;
  private readonly maxFreeBytes: number;
  private readonly free: Slab[] = [];
  /** Weak: a body never given back is the collector's once nothing else holds it. */
  private readonly lent = new WeakMap<ArrayBufferLike, Slab>();

  constructor({ minBytes = 64 * 1024, maxFree = 4, maxFreeBytes = 32 * 1024 * 1024 } = {}) {
    this.minBytes = minBytes;
    this.maxFree = maxFree;
    this.maxFreeBytes = maxFreeBytes;
  }

  /**
   * The smallest free buffer of at least `length` bytes other than `avoid`, lent until released.
   * When none is that large, a new one is made, and the smallest free one is let go: chats grow.
   */
  take(length: number, avoid: Slab | undefined): Slab {
    let fits = -1;
    let smallest = -1;
    this.free.forEach((slab, index) => {
      if (slab === avoid) return;
      const size = slab.bytes.length;
      if (size >= length && (fits < 0 || size < this.free[fits]!.bytes.length)) fits = index;
      if (smallest < 0 || size < this.free[smallest]!.bytes.length) smallest = index;
    });
    let slab: Slab;
    if (fits >= 0) slab = this.free.splice(fits, 1)[0]!;
    else {
      if (smallest >= 0) this.free.splice(smallest, 1);
      // Room to grow: a chat's next bodies are a little longer, each.
      slab = { bytes: Buffer.allocUnsafeSlow(Math.ceil((length * 1.25) / 65_536) * 65_536), uses: 0 };
    }
    slab.uses++;
    this.lent.set(slab.bytes.buffer, slab);
    return slab;
  }

  /** Gives a body back once a whole reply to it came: its buffer may hold the next. Any other buffer is let be. */
  release(body: Uint8Array | undefined): void {
    const slab = body && this.lent.get(body.buffer);
    if (!slab) return;
    this.lent.delete(body.buffer);
    const bytes = this.free.reduce((sum, each) => sum + each.bytes.length, slab.bytes.length);
    if (this.free.length < this.maxFree && bytes <= this.maxFreeBytes) this.free.push(slab);
  }
}

/** How one kind of item is encoded, and how a kept encoding is known to be still good. */
interface Encoding<T extends object> {
  cache: WeakMap<T, Encoded>;
  /** Every field the JSON is made from, in order (strings compare by value, objects by identity). */
  source(item: T): readonly unknown[];
  /** Whether the item still has the fields `made` holds; it reads them without building a list, as it runs for every message of every call. */
  matches(made: readonly unknown[], item: T): boolean;
  json(item: T): string;
}

const MESSAGES: Encoding<LlmMessage> = {
  cache: new WeakMap(),
  source(message) {
    switch (message.role) {
      case 'assistant':
        return [message.role, message.content, ...(message.toolCalls ?? []).flatMap((call) => [call.id, call.name, call.arguments])];
      case 'tool':
        return [message.role, message.content, message.toolCallId];
      case 'user':
        return message.images?.length ? [message.role, message.content, message.images] : [message.role, message.content];
      default:
        return [message.role, message.content];
    }
  },
  matches(made, message) {
    if (made[0] !== message.role || made[1] !== message.content) return false;
    if (message.role === 'tool') return made.length === 3 && made[2] === message.toolCallId;
    if (message.role === 'user' && message.images?.length) return made.length === 3 && made[2] === message.images;
    if (message.role !== 'assistant') return made.length === 2;
    const calls = message.toolCalls ?? [];
    if (made.length !== 2 + calls.length * 3) return false;
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index]!;
      if (made[2 + index * 3] !== call.id || made[3 + index * 3] !== call.name || made[4 + index * 3] !== call.arguments) return false;
    }
    return true;
  },
  json: (message) => JSON.stringify(toOpenAiMessage(message)),
};

const TOOLS: Encoding<LlmToolSchema> = {
  cache: new WeakMap(),
  source: (tool) => [tool.name, tool.description, tool.parameters],
  matches: (made, tool) => made[0] === tool.name && made[1] === tool.description && made[2] === tool.parameters,
  json: (tool) => JSON.stringify(toOpenAiTool(tool)),
};

/** The last list of messages sent that ends with this message (one per conversation: a list sent longer replaces it). */
const sentLists = new WeakMap<LlmMessage, SentList>();
/** How far from the end of a list its start is looked for as a list sent before: a call adds a message or a few. */
const LOOK_BACK = 8;

const COMMA = Buffer.from(',');

/** The body's bytes: `head`'s fields, "messages", "tools" (when there are any), `tail`'s fields. */
export function encodeRequest({ head, messages, tools, tail }: RequestParts, buffers?: BodyBuffers): Buffer {
  const opening = JSON.stringify(head);
  const parts: Buffer[] = [Buffer.from(opening === '{}' ? '{"messages":[' : `${opening.slice(0, -1)},"messages":[`)];
  const { before, key } = sentBefore(messages);
  const list = encodeMessages(messages, parts, before, key);
  if (tools?.length) {
    parts.push(Buffer.from('],"tools":['));
    tools.forEach((tool: LlmToolSchema, index: number) => {
      if (index > 0) parts.push(COMMA);
      parts.push(encoded(tool, TOOLS).bytes);
    });
  }
  const closing = JSON.stringify(tail);
  parts.push(Buffer.from(closing === '{}' ? ']}' : `],${closing.slice(1)}`));
  let length = 0;
  for (const part of parts) length += part.length;
  const slab = buffers && length >= buffers.minBytes ? buffers.take(length, before?.slab) : undefined;
  const body = slab ? join(parts, slab.bytes.subarray(0, length)) : Buffer.concat(parts, length);
  const last = messages.at(-1);
  if (last) {
    // Kept without a copy: the list's bytes are a view into the body, for the next call to start from.
    const start = parts[0]!.length;
    if (list.replaces && list.replaces !== last) sentLists.delete(list.replaces);
    sentLists.set(last, { ...list.sent, bytes: body.subarray(start, start + list.length), slab, use: slab?.uses ?? 0 });
  }
  return body;
}

/** `parts` copied one after another into `into`, which is as long as they are together. */
function join(parts: readonly Buffer[], into: Buffer): Buffer {
  let at = 0;
  for (const part of parts) {
    into.set(part, at);
    at += part.length;
  }
  return into;
}

/**
 * Appends the messages' bytes to `parts`: where a list sent before has the same messages at the
 * same places (checked one by one against what each was made from), its bytes are taken in runs;
 * every other message is encoded, or its kept bytes taken. Returns where each message landed.
 */
function encodeMessages(
  messages: readonly LlmMessage[],
  parts: Buffer[],
  before: SentList | undefined,
  key: LlmMessage | undefined,
): { sent: Pick<SentList, 'made' | 'starts' | 'ends'>; length: number; replaces: LlmMessage | undefined } {
  const count = messages.length;
  const made: (readonly unknown[])[] = new Array(count);
  const starts = new Uint32Array(count);
  const ends = new Uint32Array(count);
  const same = (index: number) => before !== undefined && index < before.made.length && MESSAGES.matches(before.made[index]!, messages[index]!);
  let length = 0;
  for (let index = 0; index < count; ) {
    if (index > 0) {
      parts.push(COMMA);
      length += 1;
    }
    if (before && same(index)) {
      let last = index;
      while (last + 1 < count && same(last + 1)) last++;
      const shift = length - before.starts[index]!;
      for (let each = index; each <= last; each++) {
        made[each] = before.made[each]!;
        starts[each] = before.starts[each]! + shift;
        ends[each] = before.ends[each]! + shift;
      }
      const run = before.bytes.subarray(before.starts[index], before.ends[last]);
      parts.push(run);
      length += run.length;
      index = last + 1;
    } else {
      const entry = encoded(messages[index]!, MESSAGES);
      made[index] = entry.made;
      starts[index] = length;
      parts.push(entry.bytes);
      length += entry.bytes.length;
      ends[index] = length;
      index++;
    }
  }
  return { sent: { made, starts, ends }, length, replaces: key };
}

/** A list sent before whose last message is near the end of `messages`, at the same place. */
function sentBefore(messages: readonly LlmMessage[]): { before: SentList | undefined; key: LlmMessage | undefined } {
  for (let end = messages.length - 1; end >= Math.max(0, messages.length - LOOK_BACK); end--) {
    const before = sentLists.get(messages[end]!);
    if (!before) continue;
    // A list whose buffer was taken again since is gone: its bytes are another body's now.
    if (before.use !== (before.slab?.uses ?? 0)) sentLists.delete(messages[end]!);
    else if (before.made.length === end + 1) return { before, key: messages[end] };
  }
  return { before: undefined, key: undefined };
}

/** An item's bytes: kept ones when it has not changed since, else encoded now and kept. */
function encoded<T extends object>(item: T, encoding: Encoding<T>): Encoded {
  let entry = encoding.cache.get(item);
  if (!entry || !encoding.matches(entry.made, item)) {
    entry = { made: encoding.source(item), bytes: Buffer.from(encoding.json(item)) };
    encoding.cache.set(item, entry);
  }
  return entry;
}

/** A message as Chat Completions reads it. */
export function toOpenAiMessage(message: LlmMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: message.role, content: message.content };
    case 'user':
      // Images go as Chat Completions' image parts after the words, each a data URL.
      return message.images?.length
        ? {
            role: 'user',
            content: [
              { type: 'text', text: message.content },
              ...message.images.map((image) => ({ type: 'image_url' as const, image_url: { url: `data:${image.mediaType};base64,${image.data}` } })),
            ],
          }
        : { role: 'user', content: message.content };
    case 'assistant':
      return message.toolCalls?.length
        ? {
            role: 'assistant',
            content: message.content,
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: wireArguments(call.arguments) },
            })),
          }
        : { role: 'assistant', content: message.content ?? '' };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default: {
      const unexpected: never = message;
      throw new Error(`Unknown message role: ${JSON.stringify(unexpected)}`);
    }
  }
}

function toOpenAiTool(tool: LlmToolSchema): ChatCompletionFunctionTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: grammarSafe(tool.parameters) } };
}

/**
 * A tool call's arguments as history sends them back: always a JSON object. A model may have
 * written arguments that do not parse (cut, or malformed); servers that render history through a
 * chat template (llama.cpp) parse them and refuse the whole request, so such text goes wrapped
 * (`{"unparsed_arguments": "…"}`): the model still sees what it wrote, and the call's error result
 * follows it.
 */
export function wireArguments(raw: string): string {
  if (!raw.trim()) return '{}';
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return raw;
  } catch {
    // Wrapped below.
  }
  return JSON.stringify({ unparsed_arguments: raw });
}
