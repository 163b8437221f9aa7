import { describe, expect, it } from 'vitest';
import { groundedEnding, shownAnswer, unresolvedAnswer } from '../../backend/src/agent/kernel/grounding.ts';

describe('grounded endings', () => {
  it('keeps an answer that rests on no failed call', () => {
    const success = { answer: '`2+2` = **4**', steps: 1, reason: 'answered' as const };
    expect(groundedEnding(success, [])).toEqual(success);
  });

  it('ends unresolved when the answer quotes the error of a failed tool call', () => {
    const ending = groundedEnding({ answer: 'The result is Division by zero in the expression', steps: 2, reason: 'answered' }, [
      { tool: 'calculator', error: 'Division by zero in the expression' },
    ]);
    expect(ending).toMatchObject({ reason: 'unresolved', summary: 'The answer rests on a failed calculator call: Division by zero in the expression.' });
  });

  it('reads the marker: the sentence is the summary, the answer says "Could not answer" in words', () => {
    const ending = groundedEnding(
      { answer: unresolvedAnswer('There is no file a.txt in this chat. Attach it.', 'Attach a.txt and ask again.'), steps: 1, reason: 'natural_stop' },
      [],
    );
    expect(ending.reason).toBe('unresolved');
    expect(ending.summary).toBe('There is no file a.txt in this chat.');
    expect(ending.answer).toBe('**Could not answer:** There is no file a.txt in this chat. Attach it.\n\nAttach a.txt and ask again.');
    expect(shownAnswer(unresolvedAnswer('Nothing to do.'))).toBe('**Could not answer:** Nothing to do.');
  });

  it('leaves endings that claim no success alone, the marker removed', () => {
    const ending = groundedEnding({ answer: unresolvedAnswer('Out of steps.'), steps: 5, reason: 'max_steps' }, [
      { tool: 'calculator', error: 'Out of steps entirely' },
    ]);
    expect(ending).toMatchObject({ reason: 'max_steps', answer: '**Could not answer:** Out of steps.' });
    expect(ending.summary).toBeUndefined();
  });
});
