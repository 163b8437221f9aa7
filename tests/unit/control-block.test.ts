import { findLastJsonObject, ObserveControl, parseControlBlock, ReasonControl } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('the control-block parser', () => {
  it('reads a fenced block at the end and strips it from the prose', () => {
    const text = 'I will use the calculator.\n\n```json\n{"plan": "multiply", "tools_to_consider": ["calculator"], "finish": false}\n```';
    expect(parseControlBlock(text, ReasonControl)).toEqual({
      prose: 'I will use the calculator.',
      control: { plan: 'multiply', tools_to_consider: ['calculator'], finish: false },
    });
  });

  it('reads a bare block', () => {
    const parsed = parseControlBlock('Done. {"observation": "126", "should_continue": false, "final_answer": "126"}', ObserveControl);
    expect(parsed).toEqual({ prose: 'Done.', control: { observation: '126', should_continue: false, final_answer: '126' } });
  });

  it('takes the last of several JSON objects', () => {
    const text = 'Example: {"plan": "first"} and then {"plan": "second", "finish": true}';
    expect(parseControlBlock(text, ReasonControl).control).toEqual({ plan: 'second', finish: true });
  });

  it('handles braces and quotes inside strings', () => {
    const text = 'Note.\n{"observation": "a } brace and a \\" quote {", "should_continue": true}';
    expect(parseControlBlock(text, ObserveControl).control).toEqual({
      observation: 'a } brace and a " quote {',
      should_continue: true,
    });
  });

  it('reads nested objects as one block', () => {
    expect(findLastJsonObject('x {"a": {"b": 1}} y')?.value).toEqual({ a: { b: 1 } });
  });

  it('treats malformed JSON as free text', () => {
    const text = 'Thinking {"plan": "unterminated';
    expect(parseControlBlock(text, ReasonControl)).toEqual({ prose: text, control: null });
  });

  it('treats a block of the wrong shape as free text', () => {
    const text = 'Hmm {"should_continue": "maybe"}';
    expect(parseControlBlock(text, ObserveControl)).toEqual({ prose: text, control: null });
  });

  it('treats an unrelated JSON object as free text', () => {
    const text = 'The API returns {"id": 7}';
    expect(parseControlBlock(text, ReasonControl)).toEqual({ prose: text, control: null });
  });

  it('returns free text when there is no block at all', () => {
    expect(parseControlBlock('  just words  ', ReasonControl)).toEqual({ prose: 'just words', control: null });
  });

  it('stays fast on a long run of unmatched braces', () => {
    const text = `${'{'.repeat(50_000)} {"plan": "x"}`;
    expect(parseControlBlock(text, ReasonControl).control).toEqual({ plan: 'x' });
  });
});
