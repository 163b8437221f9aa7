import { z } from 'zod';
import type { LlmMessage } from '../messages.ts';
import type { OutputSchema } from './llm-client.ts';

const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();
const inputSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/** The JSON Schema of a zod schema, made once per schema (every call with it reuses it). */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output' = 'output'): Record<string, unknown> {
  const cache = io === 'output' ? jsonSchemas : inputSchemas;
  let json = cache.get(schema);
  if (!json) {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
    json = rest;
    cache.set(schema, json);
  }
  return json;
}

/** `response_format` asking for `output` as strict structured output. */
export function responseFormat(output: OutputSchema<unknown>) {
  return {
    type: 'json_schema' as const,
    json_schema: { name: output.name, strict: true, schema: strictSchema(jsonSchemaOf(output.zod)) },
  };
}

const strictSchemas = new WeakMap<object, Record<string, unknown>>();

/**
 * A data schema as strict structured output takes it: within grammar limits, and without string
 * length bounds, which OpenAI's strict mode does not permit (array bounds it does). The validator
 * still applies them, and a reply past one gets the re-ask.
 */
function strictSchema(schema: Record<string, unknown>): Record<string, unknown> {
  let strict = strictSchemas.get(schema);
  if (!strict) {
    strict = withoutKeywords(grammarSafe(schema), (key) => key === 'minLength' || key === 'maxLength');
    strictSchemas.set(schema, strict);
  }
  return strict;
}

/**
 * llama.cpp (and servers built on its grammar engine) refuses a grammar in which a repeated
 * element's rules times its repetition count reach 2000 (MAX_REPETITION_THRESHOLD), and then
 * generates without any grammar: a string's `maxLength` of 2000 or an array's `maxItems` of
 * hundreds does it, and an integer bounded at ±(2^53-1) (zod's `.int()`) makes a huge rule.
 * So the wire schema leaves out the bounds past these limits; the validator still enforces them,
 * and a reply past one gets the validator's error. Lower bounds that matter (`minItems`,
 * `minLength` within the limit) stay.
 */
export const GRAMMAR_LIMITS = { maxLength: 1000, maxItems: 50, integerBound: 1_000_000_000 } as const;

const grammarSafeSchemas = new WeakMap<object, Record<string, unknown>>();

/** The schema with the bounds grammar engines cannot compile left out (see GRAMMAR_LIMITS); made once per schema object. */
export function grammarSafe(schema: Record<string, unknown>): Record<string, unknown> {
  let safe = grammarSafeSchemas.get(schema);
  if (!safe) {
    safe = withoutKeywords(schema, pastGrammarLimits);
    grammarSafeSchemas.set(schema, safe);
  }
  return safe;
}

function pastGrammarLimits(key: string, value: number): boolean {
  if (key === 'maxLength' || key === 'minLength') return value >= GRAMMAR_LIMITS.maxLength;
  if (key === 'maxItems' || key === 'minItems') return value > GRAMMAR_LIMITS.maxItems;
  if (key === 'minimum' || key === 'maximum' || key === 'exclusiveMinimum' || key === 'exclusiveMaximum') return Math.abs(value) > GRAMMAR_LIMITS.integerBound;
  return false;
}

/** A copy of a JSON Schema without the numeric keywords `drop` names (a property named like one, an object, is kept). */
function withoutKeywords(schema: Record<string, unknown>, drop: (key: string, value: number) => boolean): Record<string, unknown> {
  const walk = (node: unknown, depth: number): unknown => {
    if (depth > 64) return node;
    if (Array.isArray(node)) return node.map((item) => walk(item, depth + 1));
    if (typeof node !== 'object' || node === null) return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'number' && drop(key, value)) continue;
      out[key] = walk(value, depth + 1);
    }
    return out;
  };
  return walk(schema, 0) as Record<string, unknown>;
}

/**
 * The messages of a call that asks for data in the prompt (for endpoints without structured
 * output): the first system message ends with the schema and the request for JSON only.
 */
export function askForJson(messages: LlmMessage[], output: OutputSchema<unknown>): LlmMessage[] {
  const instruction = [
    `Answer with one JSON object only (no prose, no code fence) that fits this JSON Schema, named "${output.name}":`,
    JSON.stringify(jsonSchemaOf(output.zod)),
  ].join('\n');
  const index = messages.findIndex((message) => message.role === 'system');
  if (index < 0) return [{ role: 'system', content: instruction }, ...messages];
  return messages.map((message, at) => (at === index ? { role: 'system', content: `${message.content as string}\n\n${instruction}` } : message));
}

/** What a reply that should hold data turned out to be. */
export type ParsedReply<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * Reads data from a model's reply, leniently: a code fence, prose around the object, or a trailing
 * comma do not matter; the object must then fit the schema.
 */
export function parseReply<T>(text: string, schema: z.ZodType<T>): ParsedReply<T> {
  const candidate = jsonCandidate(text);
  if (candidate === undefined) return { ok: false, problem: 'the reply holds no JSON object' };
  // The problem goes back to the model and into messages: it names no part of the reply.
  const value = lenientJson(candidate);
  if (value === NOT_JSON) return { ok: false, problem: 'its JSON does not parse' };
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : 'the object';
  return { ok: false, problem: `${where}: ${issue?.message ?? 'does not fit the schema'}` };
}

/** The messages of the one re-ask after a reply that did not fit. */
export function reAsk(messages: LlmMessage[], reply: string, output: OutputSchema<unknown>, problem: string): LlmMessage[] {
  return [
    ...messages,
    { role: 'assistant', content: reply },
    {
      role: 'user',
      content: `That reply is not a valid "${output.name}" object (${problem}). Reply again with the JSON object only, fitting the schema.`,
    },
  ];
}

/** How many candidate objects one reply may cost a parse: bounds the work on a reply of nested braces. */
const MAX_PARSE_ATTEMPTS = 16;

/**
 * The JSON object of a text: inside each ```fence (json-labelled first), then the text itself; in
 * each, the first `{` whose balanced object parses. Linear in the text's length: each source's
 * braces are matched in one pass, and at most MAX_PARSE_ATTEMPTS candidates are parsed in all.
 */
function jsonCandidate(text: string): string | undefined {
  let attempts = 0;
  for (const source of [...fencedBlocks(text), text]) {
    const closing = matchingBraces(source);
    for (let start = source.indexOf('{'); start >= 0 && attempts < MAX_PARSE_ATTEMPTS; start = source.indexOf('{', start + 1)) {
      const end = closing[start]!;
      if (end < 0) break;
      attempts++;
      const object = source.slice(start, end + 1);
      if (parsesLeniently(object)) return object;
    }
  }
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  const end = matchingBraces(text)[start]!;
  return end < 0 ? text.slice(start) : text.slice(start, end + 1);
}

/** For each `{` of `source`, the index of its matching `}` (strings inside objects and escapes respected), or -1; one pass. */
function matchingBraces(source: string): Int32Array {
  const closing = new Int32Array(source.length).fill(-1);
  const open: number[] = [];
  let inString = false;
  for (let index = 0; index < source.length; index++) {
    const char = source.charCodeAt(index);
    if (inString) {
      if (char === 0x5c) index++;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22)
      inString = open.length > 0; // a quote in prose outside any object opens no string
    else if (char === 0x7b) open.push(index);
    else if (char === 0x7d && open.length > 0) closing[open.pop()!] = index;
  }
  return closing;
}

/** The contents of each ``` fence, json-labelled ones first. */
function fencedBlocks(text: string): string[] {
  const labelled: string[] = [];
  const other: string[] = [];
  for (let open = text.indexOf('```'); open >= 0; ) {
    const lineEnd = text.indexOf('\n', open + 3);
    if (lineEnd < 0) break;
    const close = text.indexOf('```', lineEnd + 1);
    if (close < 0) break;
    const label = text
      .slice(open + 3, lineEnd)
      .trim()
      .toLowerCase();
    (label === 'json' ? labelled : other).push(text.slice(lineEnd + 1, close));
    open = text.indexOf('```', close + 3);
  }
  return [...labelled, ...other];
}

function parsesLeniently(candidate: string): boolean {
  return lenientJson(candidate) !== NOT_JSON;
}

const NOT_JSON = Symbol('not json');

/** JSON.parse, and once more without trailing commas (outside strings) when that fails. */
function lenientJson(candidate: string): unknown {
  try {
    return JSON.parse(candidate);
  } catch {
    try {
      return JSON.parse(withoutTrailingCommas(candidate));
    } catch {
      return NOT_JSON;
    }
  }
}

/** Drops commas right before `}` or `]`, outside strings. */
function withoutTrailingCommas(text: string): string {
  let out = '';
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (inString) {
      out += char;
      if (char === '\\') out += text[++index] ?? '';
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    if (char === ',') {
      let ahead = index + 1;
      while (ahead < text.length && /\s/.test(text[ahead]!)) ahead++;
      if (text[ahead] === '}' || text[ahead] === ']') continue;
    }
    out += char;
  }
  return out;
}
