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
    json_schema: { name: output.name, strict: true, schema: jsonSchemaOf(output.zod) },
  };
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
  let value: unknown;
  try {
    value = JSON.parse(candidate);
  } catch {
    try {
      value = JSON.parse(candidate.replace(/,\s*([}\]])/g, '$1'));
    } catch (error) {
      return { ok: false, problem: `the JSON does not parse (${(error as Error).message})` };
    }
  }
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

/** The outermost JSON object of a text: a fenced block's, else from the first `{` to its matching `}`. */
function jsonCandidate(text: string): string | undefined {
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(text)?.[1];
  const source = fenced ?? text;
  const start = source.indexOf('{');
  if (start < 0) return undefined;
  let depth = 0;
  let inString = false;
  for (let index = start; index < source.length; index++) {
    const char = source[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return source.slice(start, index + 1);
  }
  return source.slice(start);
}
