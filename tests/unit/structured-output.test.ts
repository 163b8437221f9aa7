// The lenient reader of structured replies, on adversarial text.
import { GRAMMAR_LIMITS, grammarSafe, jsonSchemaOf, parseReply, wireArguments } from '@stepwise/backend';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

const Plan = z.object({ plan: z.string(), steps: z.array(z.string()) });

describe('parseReply', () => {
  it('a degenerate reply (an open fence, then whitespace up to the output cap) is refused, read in one pass', () => {
    // Small local models fall into repeating newlines; the default LLM_MAX_OUTPUT_CHARS is 200 000.
    // (The reader scans with indexOf, never a backtracking regex; bench/, not this test, times it.)
    const text = `\`\`\`json\n${'\n'.repeat(200_000)}`;
    expect(parseReply(text, Plan)).toEqual({ ok: false, problem: 'the reply holds no JSON object' });
  });

  it('a fence inside a JSON string does not cut the object', () => {
    const text = '```json\n{"plan":"run ```ls``` first","steps":["a"]}\n```';
    expect(parseReply(text, Plan)).toMatchObject({ ok: true });
  });

  it('an unrelated code block before the JSON object does not hide it', () => {
    const text = 'Here is how:\n```bash\nls -la\n```\nAnd the data:\n{"plan":"p","steps":["a"]}';
    expect(parseReply(text, Plan)).toMatchObject({ ok: true });
  });

  it('a brace in the prose before the object does not hide it', () => {
    const text = 'Use a set {a, b}. {"plan":"p","steps":["a"]}';
    expect(parseReply(text, Plan)).toMatchObject({ ok: true });
  });

  it('holds: nested braces and escaped quotes in strings, trailing commas, prose around', () => {
    expect(parseReply('Sure! {"plan":"a {b} \\"}\\" c","steps":["x",],} Thanks.', Plan)).toMatchObject({ ok: true, value: { plan: 'a {b} "}" c' } });
    expect(parseReply('```json\n{"plan":"p","steps":[]}\n```', Plan)).toMatchObject({ ok: true });
  });

  it('the trailing-comma repair does not rewrite string contents', () => {
    // Only reached when the first parse fails (here: the real trailing comma after the array).
    const text = '{"plan":"keep this, }","steps":["a",],}';
    expect(parseReply(text, Plan)).toMatchObject({ ok: true, value: { plan: 'keep this, }' } });
  });

  it('a quote in the prose before the object does not hide it', () => {
    expect(parseReply('A 5" screen. {"plan":"p","steps":["a"]}', Plan)).toMatchObject({ ok: true });
  });
});

describe('parseReply on nested and unbalanced braces up to the output cap', () => {
  afterEach(() => vi.restoreAllMocks());
  const CAP = 200_000;
  const cases: Record<string, string> = {
    'nested braces': '{'.repeat(CAP / 2) + '}'.repeat(CAP / 2),
    'unbalanced opening braces': '{'.repeat(CAP),
    'unbalanced closing braces': '}'.repeat(CAP),
    'nested objects with strings': `${'{"a":'.repeat(CAP / 10)}1${'}'.repeat(CAP / 10)}`,
    'brace pairs side by side': '{}'.repeat(CAP / 2),
    'a fence of nested braces': `\`\`\`json\n${'{'.repeat(CAP / 2)}${'}'.repeat(CAP / 2)}\n\`\`\``,
  };
  // Work is counted in parse attempts, never timed: each attempt reads at most the whole reply,
  // so a bounded number of attempts keeps the read linear in the reply's length.
  it.each(Object.entries(cases))('%s: refused after a bounded number of parse attempts', (_name, text) => {
    const parse = vi.spyOn(JSON, 'parse');
    expect(parseReply(text, Plan)).toMatchObject({ ok: false });
    expect(parse.mock.calls.length).toBeLessThanOrEqual(2 * 16 * 2 + 2);
  });
});

describe('grammarSafe', () => {
  /** Every bound of a schema that grammar engines repeat a rule for: llama.cpp refuses rules × repetitions of 2000 or more. */
  function repetitionBounds(node: unknown, found: { key: string; value: number }[] = []): { key: string; value: number }[] {
    if (Array.isArray(node)) for (const item of node) repetitionBounds(item, found);
    else if (typeof node === 'object' && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        if (typeof value === 'number' && ['maxLength', 'minLength', 'maxItems', 'minItems', 'minimum', 'maximum'].includes(key)) found.push({ key, value });
        else repetitionBounds(value, found);
      }
    }
    return found;
  }

  it("keeps the built-in tools' and zod's large bounds off the wire, within llama.cpp's grammar limits, and the small ones on it", () => {
    const schema = jsonSchemaOf(
      z.object({
        expression: z.string().min(1).max(2_000),
        offset: z.number().int().min(0),
        lines: z.array(z.string().max(200)).min(1).max(500),
        steps: z.array(z.string().min(1)).min(1).max(8),
      }),
      'input',
    );
    const safe = grammarSafe(schema);
    for (const { key, value } of repetitionBounds(safe)) {
      if (key.endsWith('Length')) expect(value).toBeLessThan(GRAMMAR_LIMITS.maxLength);
      if (key.endsWith('Items')) expect(value).toBeLessThanOrEqual(GRAMMAR_LIMITS.maxItems);
      if (key === 'minimum' || key === 'maximum') expect(Math.abs(value)).toBeLessThanOrEqual(GRAMMAR_LIMITS.integerBound);
    }
    expect(repetitionBounds(safe)).toEqual(
      expect.arrayContaining([
        { key: 'minLength', value: 1 },
        { key: 'minimum', value: 0 },
        { key: 'minItems', value: 1 },
        { key: 'maxLength', value: 200 },
        { key: 'maxItems', value: 8 },
      ]),
    );
    // The schema the validator reads is left as it was.
    expect(JSON.stringify(schema)).toContain('"maxLength":2000');
  });

  it('sends tool-call arguments that do not parse as a JSON object wrapped, and JSON objects as they are', () => {
    expect(wireArguments('{"a": 1}')).toBe('{"a": 1}');
    expect(wireArguments('')).toBe('{}');
    expect(JSON.parse(wireArguments('{"expression": "2+'))).toEqual({ unparsed_arguments: '{"expression": "2+' });
    expect(JSON.parse(wireArguments('[1, 2]'))).toEqual({ unparsed_arguments: '[1, 2]' });
  });
});
