import { describe, expect, it } from 'vitest';
import { streamingProse } from '../../shared-types/src/streaming-prose.ts';

const fenced = (prose: string, control: object) => `${prose}\n\n\`\`\`json\n${JSON.stringify(control)}\n\`\`\``;

/** Every prefix of the text, as the deltas deliver it one character at a time. */
const prefixes = (text: string) => Array.from({ length: text.length + 1 }, (_, length) => text.slice(0, length));

describe('the prose shown while reason or observe text streams', () => {
  it('never shows any part of a fenced control block, at any point of the stream', () => {
    const text = fenced('Evaluate 6*7*2 with the calculator.', { plan: 'Evaluate 6*7*2', tools_to_consider: ['calculator'], finish: false });
    for (const prefix of prefixes(text)) {
      const shown = streamingProse(prefix);
      expect(shown).not.toMatch(/[`{}]|"plan"|json/);
      expect('Evaluate 6*7*2 with the calculator.'.startsWith(shown)).toBe(true);
    }
    expect(streamingProse(text)).toBe('Evaluate 6*7*2 with the calculator.');
  });

  it('never shows a bare control block that starts on a line of its own', () => {
    const text = `The calculator returned 84.\n${JSON.stringify({ observation: 'It is 84', should_continue: false, final_answer: '84' })}`;
    for (const prefix of prefixes(text)) expect(streamingProse(prefix)).not.toMatch(/[{}]|should_continue/);
    expect(streamingProse(text)).toBe('The calculator returned 84.');
  });

  it('cuts a JSON object that follows the prose on the same line', () => {
    expect(streamingProse('Done here. {"finish": true')).toBe('Done here.');
    expect(streamingProse('Done here. {')).toBe('Done here.');
    expect(streamingProse('Done here. {"finish": true}')).toBe('Done here.');
  });

  it('keeps what was cut short by a stop inside the control block to the prose before it', () => {
    expect(streamingProse('I will add 2 and 2.\n\n```json\n{"plan": "add", "tools_to_con')).toBe('I will add 2 and 2.');
    expect(streamingProse('I will add 2 and 2.\n\n``')).toBe('I will add 2 and 2.');
    expect(streamingProse('I will add 2 and 2.\n\n```js')).toBe('I will add 2 and 2.');
  });

  it('keeps prose that goes on after a finished control block', () => {
    expect(streamingProse('First.\n```json\n{"plan": "x"}\n```\nThen more.')).toBe('First.\n\nThen more.');
  });

  it('shows code that is not JSON, and braces that are not an object, as written', () => {
    const code = 'Run this:\n```\nprint(6*7)\n```\nand read the output.';
    expect(streamingProse(code)).toBe(code);
    expect(streamingProse('The set {a, b} has two members.')).toBe('The set {a, b} has two members.');
    expect(streamingProse('Use `x` and ``y`` here.')).toBe('Use `x` and ``y`` here.');
  });

  it('shows the asterisks and underscores of arithmetic and names untouched', () => {
    expect(streamingProse('Evaluate 6*7*2 with snake_case_names.')).toBe('Evaluate 6*7*2 with snake_case_names.');
  });

  it('shows nothing when the text so far is only a control block', () => {
    expect(streamingProse('```json\n{"plan": "answer", "finish": true}\n```')).toBe('');
    expect(streamingProse('{"plan": "answer"')).toBe('');
  });
});
