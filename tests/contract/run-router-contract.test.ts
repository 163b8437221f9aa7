// The RunRouter port: a command reaches the session's run wherever it executes, and an answer for a
// run executing nowhere just now is kept where something keeps it. One suite over its adapters:
// one process, an instance among several (Redis), and runs in Restate workflows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostingsUnderTest } from '../helpers/hostings.ts';

describe.each(hostingsUnderTest({ restate: true }))('the run router $name', (adapter) => {
  beforeAll(() => adapter.setup(), 120_000);
  afterAll(() => adapter.teardown(), 60_000);

  it('sends a command to the run that holds the session, and "nothing to do" when none does', async () => {
    const { lease, router, controlBus } = adapter.ports();
    // Where instances share sessions, the command is sent from the other one.
    const from = adapter.other?.().router ?? router;
    const run = await adapter.newRun();
    expect(await from.sendToSession(run.sessionId, { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'no_active_run' });
    const seen: string[] = [];
    const detach = controlBus.attach(run.runId, (command) => {
      seen.push(command.type);
      return command.type === 'stop' ? { type: 'stop', outcome: 'stopping' } : { type: 'answer', outcome: 'answered' };
    });
    try {
      expect(await lease.claim(run.sessionId, run.runId)).toBe(true);
      expect(await from.sendToSession(run.sessionId, { type: 'answer', answer: { kind: 'text', text: 'Oslo' }, questionId: 'q_1' })).toEqual({
        type: 'answer',
        outcome: 'answered',
      });
      expect(await router.sendToSession(run.sessionId, { type: 'stop', reason: 'user' })).toEqual({ type: 'stop', outcome: 'stopping' });
      expect(seen).toEqual(['answer', 'stop']);
    } finally {
      detach();
      await lease.release(run.sessionId, run.runId);
    }
    expect(await from.sendToSession(run.sessionId, { type: 'answer', answer: { kind: 'text', text: 'late' } })).toEqual({
      type: 'answer',
      outcome: 'no_pending_input',
    });
  });

  it('keeps an answer for a run executing nowhere just now, the first answer standing, when it keeps answers at all', async () => {
    const { router } = adapter.ports();
    const run = await adapter.newRun();
    expect(await router.keepAnswer(run.runId, 'q_1', { kind: 'text', text: 'Oslo' })).toBe(adapter.keepsAnswers);
    expect(await router.keepAnswer(run.runId, 'q_1', { kind: 'text', text: 'Bergen' })).toBe(false);
  });
});
