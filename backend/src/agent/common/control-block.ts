import { matchBrace, ProseStream } from '@stepwise/shared-types';
import { z } from 'zod';

/** The reason phase's control block. */
export const ReasonControl = z.object({
  plan: z.string().optional(),
  tools_to_consider: z.array(z.string()).optional(),
  finish: z.boolean().optional(),
});
export type ReasonControl = z.infer<typeof ReasonControl>;

/** The observe phase's control block. */
export const ObserveControl = z.object({
  observation: z.string().optional(),
  should_continue: z.boolean().optional(),
  final_answer: z.string().optional(),
});
export type ObserveControl = z.infer<typeof ObserveControl>;

/** Text split into the prose a person reads and the control block, when one was found and valid. */
export interface ParsedReply<T> {
  prose: string;
  control: T | null;
}

/** Only the tail is searched, so a huge reply cannot make the search quadratic in its whole length. */
const SEARCH_WINDOW = 8_000;

/**
 * Finds the last JSON object in `text`, fenced (```json … ```) or bare, and validates it against
 * `schema`. A block that is missing, malformed, or of the wrong shape leaves the text as free text.
 */
export function parseControlBlock<T extends Record<string, unknown>>(text: string, schema: z.ZodType<T>): ParsedReply<T> {
  const found = findLastJsonObject(text);
  if (!found) return { prose: text.trim(), control: null };
  const parsed = schema.safeParse(found.value);
  const knownKeys = Object.keys(found.value).some((key) => key in (schema as unknown as z.ZodObject).shape);
  if (!parsed.success || !knownKeys) return { prose: text.trim(), control: null };
  const prose = (text.slice(0, found.start) + text.slice(found.end)).replace(/\n{3,}/g, '\n\n').trim();
  return { prose, control: parsed.data };
}

/** The last top-level JSON object in the text, with its span (widened to its code fence, if any). */
export function findLastJsonObject(text: string): { value: Record<string, unknown>; start: number; end: number } | null {
  const offset = Math.max(0, text.length - SEARCH_WINDOW);
  let last: { value: Record<string, unknown>; start: number; end: number } | null = null;
  let index = text.indexOf('{', offset);
  while (index !== -1) {
    const end = matchBrace(text, index);
    if (end !== -1) {
      const value = tryParseObject(text.slice(index, end));
      if (value) {
        last = { value, start: index, end };
        index = text.indexOf('{', end);
        continue;
      }
    }
    index = text.indexOf('{', index + 1);
  }
  if (!last) return null;
  return { ...last, ...widenToFence(text, last.start, last.end) };
}

function tryParseObject(candidate: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(candidate);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function widenToFence(text: string, start: number, end: number): { start: number; end: number } {
  const before = /```[a-zA-Z]*\s*$/.exec(text.slice(Math.max(0, start - 20), start));
  const after = /^\s*```/.exec(text.slice(end, end + 20));
  if (!before || !after) return { start, end };
  return { start: start - before[0].length, end: end + after[0].length };
}

/**
 * Wraps a stream of text deltas so that only prose passes: the control block a reply ends with
 * (and anything that may still become one) is held back, so no client, whatever it renders,
 * sees the loop's JSON while the text streams. The full event carries the prose once more. Each
 * delta is read once (ProseStream), so a long reply costs time in proportion to its length.
 */
export function proseDeltas(send: (delta: string) => void): (delta: string) => void {
  const prose = new ProseStream();
  return (delta) => {
    const next = prose.push(delta);
    if (next) send(next);
  };
}
