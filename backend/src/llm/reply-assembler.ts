import { ModelError } from '../errors.ts';
import type { LlmToolCall } from './llm-client.ts';

interface PartialToolCall {
  id: string;
  name: string;
  arguments: string;
  /** Part of it did not fit under the cap: it must not run. */
  cut: boolean;
}

type Fields = Record<string, unknown>;

/**
 * Collects a reply's chunks into text and tool calls, keeping at most `maxChars` characters of
 * what the model wrote (text, tool ids, names and arguments together). What passes the cap is
 * dropped and `truncated` says so; the caller then stops reading.
 */
export class ReplyAssembler {
  /** Makes the ids this reply gives its tool calls (when the endpoint sends none) unique to it. */
  private readonly idPrefix = Math.random().toString(36).slice(2, 10);
  private text = '';
  /** What the model said when it declined to answer (the `refusal` field), if it did. */
  private refusal = '';
  private readonly calls = new Map<number, PartialToolCall>();
  private used = 0;
  /** The usage object as the endpoint reported it, not checked yet. */
  reportedUsage: unknown;
  /** The response's own id and model, as its chunks name them. */
  responseId: string | undefined;
  responseModel: string | undefined;
  /** True once a chunk carried a finish_reason. */
  finished = false;
  /** The finish_reason the endpoint gave: `length` when the reply was cut at the model's output limit. */
  finishReason: string | undefined;
  /** True once something did not fit under the cap. */
  truncated = false;

  constructor(private readonly maxChars: number) {}

  /** Adds one chunk (parsed JSON of any shape); returns the text it adds, if any. */
  add(chunk: unknown): string {
    if (!isFields(chunk)) return '';
    if (chunk.usage !== undefined && chunk.usage !== null) this.reportedUsage = chunk.usage;
    if (typeof chunk.id === 'string' && chunk.id) this.responseId ??= chunk.id;
    if (typeof chunk.model === 'string' && chunk.model) this.responseModel ??= chunk.model;
    const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isFields(choice)) return '';
    if (choice.finish_reason) {
      this.finished = true;
      this.finishReason = String(choice.finish_reason);
    }
    const delta = choice.delta;
    if (!isFields(delta)) return '';
    if (typeof delta.refusal === 'string') this.refusal += this.take(delta.refusal);
    const text = this.take(typeof delta.content === 'string' ? delta.content : '');
    this.text += text;
    const toolCalls: unknown[] = Array.isArray(delta.tool_calls) ? delta.tool_calls : [];
    for (const [position, call] of toolCalls.entries()) {
      if (isFields(call)) this.addToolCall(call, position);
    }
    return text;
  }

  /** True when the endpoint said the reply stopped at the model's output limit (finish_reason `length`). */
  get cutAtLimit(): boolean {
    return this.finishReason === 'length';
  }

  /**
   * The reply so far. Tool calls that were cut are left out: half an argument list must not run.
   * A reply cut at the model's output limit loses its last call, and any whose arguments do not
   * parse: the limit may have fallen inside them.
   */
  result(): { text: string; toolCalls: LlmToolCall[]; refusal: string } {
    let last = -1;
    if (this.cutAtLimit) for (const index of this.calls.keys()) last = Math.max(last, index);
    const toolCalls = [...this.calls.entries()]
      .filter(([index, call]) => !call.cut && !(this.cutAtLimit && (index === last || !parsesAsObject(call.arguments))))
      .sort(([a], [b]) => a - b)
      // An endpoint that sends no ids gets unique ones: questions, answers and results are journaled by them.
      .map(([index, call]) => ({ id: call.id || `call_${this.idPrefix}_${index}`, name: call.name, arguments: call.arguments }));
    return { text: this.text, toolCalls, refusal: this.refusal };
  }

  private addToolCall(call: Fields, position: number): void {
    const index = typeof call.index === 'number' && Number.isSafeInteger(call.index) ? call.index : position;
    let current = this.calls.get(index);
    if (!current) {
      // A new call costs a character, so a flood of empty calls meets the cap too.
      if (this.take(' ') === '') return;
      current = { id: '', name: '', arguments: '', cut: false };
      this.calls.set(index, current);
    }
    const fn = isFields(call.function) ? call.function : {};
    for (const [key, piece] of [
      ['id', call.id],
      ['name', fn.name],
      ['arguments', fn.arguments],
    ] as const) {
      if (typeof piece !== 'string' || piece === '') continue;
      const kept = this.take(piece);
      if (kept.length < piece.length) current.cut = true;
      // Ids come whole in one chunk; names and arguments arrive in pieces.
      current[key] = key === 'id' ? kept : current[key] + kept;
    }
  }

  /** As much of `piece` as still fits under the cap. */
  private take(piece: string): string {
    const room = this.maxChars - this.used;
    if (piece.length > room) {
      this.truncated = true;
      piece = piece.slice(0, room);
    }
    this.used += piece.length;
    return piece;
  }
}

/**
 * A whole (not streamed) completion as one chunk, so the same assembly and cap apply to it.
 * Throws a retryable ModelError when it holds no message.
 */
export function completionAsChunk(completion: unknown): unknown {
  const fields = isFields(completion) ? completion : {};
  const choice: unknown = Array.isArray(fields.choices) ? fields.choices[0] : undefined;
  const message = isFields(choice) ? choice.message : undefined;
  if (!isFields(choice) || !isFields(message)) {
    throw new ModelError('The model endpoint sent a malformed response (no choices)', { retryable: true });
  }
  const toolCalls = (Array.isArray(message.tool_calls) ? message.tool_calls : [])
    .filter((call): call is Fields => isFields(call) && call.type === 'function')
    .map((call, index) => ({ index, id: call.id, function: call.function }));
  return {
    id: fields.id,
    model: fields.model,
    usage: fields.usage,
    choices: [{ finish_reason: choice.finish_reason ?? 'stop', delta: { content: message.content, refusal: message.refusal, tool_calls: toolCalls } }],
  };
}

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parsesAsObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return isFields(value);
  } catch {
    return false;
  }
}
