import { AgentControl, InputTimeoutError } from '@stepwise/backend';
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
    const answer = control.waitForInput(1_000);
    expect(control.awaitingInput).toBe(true);
    expect(control.provideInput('Oslo')).toBe(true);
    await expect(answer).resolves.toBe('Oslo');
    expect(control.awaitingInput).toBe(false);
  });

  it('refuses an answer when nothing waits', () => {
    expect(new AgentControl().provideInput('stray')).toBe(false);
  });

  it('times out with InputTimeoutError', async () => {
    const control = new AgentControl();
    await expect(control.waitForInput(10)).rejects.toBeInstanceOf(InputTimeoutError);
    expect(control.awaitingInput).toBe(false);
  });

  it('rejects a pending wait at once when stopped', async () => {
    const control = new AgentControl();
    const wait = control.waitForInput(60_000);
    control.stop();
    await expect(wait).rejects.toMatchObject({ name: 'AbortError' });
    expect(control.provideInput('late')).toBe(false);
  });

  it('rejects at once when the given signal is already aborted', async () => {
    const control = new AgentControl();
    await expect(control.waitForInput(60_000, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
  });
});
