import { AgentControl, InputTimeoutError, textAnswer } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

describe('AgentControl', () => {
  it('aborts its signal on stop and remembers why', () => {
    const control = new AgentControl();
    control.stop('shutdown');
    control.stop('user');
    expect(control.signal.aborted).toBe(true);
    expect(control.stopReason).toBe('shutdown');
    expect(() => control.throwIfStopped()).toThrowError(expect.objectContaining({ name: 'AbortError' }));
  });

  it('hands an answer to the waiting question', async () => {
    const control = new AgentControl();
    const answer = control.waitForInput('q1', 1_000);
    expect(control.awaitingInput).toBe(true);
    expect(control.provideInput(textAnswer('Oslo'))).toBe('answered');
    await expect(answer).resolves.toBe('Oslo');
    expect(control.awaitingInput).toBe(false);
  });

  it('refuses an answer when nothing waits', () => {
    expect(new AgentControl().provideInput(textAnswer('stray'))).toBe('no_pending_input');
  });

  it('times out with InputTimeoutError', async () => {
    const control = new AgentControl();
    await expect(control.waitForInput('q1', 10)).rejects.toBeInstanceOf(InputTimeoutError);
    expect(control.awaitingInput).toBe(false);
  });

  it('rejects a pending wait at once when stopped', async () => {
    const control = new AgentControl();
    const wait = control.waitForInput('q1', 60_000);
    control.stop();
    await expect(wait).rejects.toMatchObject({ name: 'AbortError' });
    expect(control.provideInput(textAnswer('late'))).toBe('no_pending_input');
  });

  it('rejects at once when the given signal is already aborted', async () => {
    const control = new AgentControl();
    await expect(control.waitForInput('q1', 60_000, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('answers two pending questions by id, out of order, each its own', async () => {
    const control = new AgentControl();
    const first = control.waitForInput('q-first', 60_000);
    const second = control.waitForInput('q-second', 60_000);
    expect(control.pendingQuestions).toEqual(['q-first', 'q-second']);
    expect(control.provideInput(textAnswer('for the second'), 'q-second')).toBe('answered');
    expect(control.provideInput(textAnswer('for the first'), 'q-first')).toBe('answered');
    await expect(first).resolves.toBe('for the first');
    await expect(second).resolves.toBe('for the second');
  });

  it('refuses an answer without id while two questions wait, and one with an unknown id', async () => {
    const control = new AgentControl();
    const first = control.waitForInput('q-first', 60_000);
    const second = control.waitForInput('q-second', 60_000);
    expect(control.provideInput(textAnswer('which?'))).toBe('ambiguous_input');
    expect(control.provideInput(textAnswer('nobody'), 'q-nobody')).toBe('unknown_question');
    expect(control.pendingQuestions).toEqual(['q-first', 'q-second']);
    control.stop();
    await Promise.allSettled([first, second]);
  });
});
