// The SessionLease port: who holds a session, one run at a time, wherever it executes. One suite
// over its adapters: one process, and an instance among several (leases in PostgreSQL). Restate
// keeps the lease of the process or cluster beneath it (see run-host-contract).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostingsUnderTest } from '../helpers/hostings.ts';

describe.each(hostingsUnderTest({ restate: false }))('the session lease $name', (adapter) => {
  beforeAll(() => adapter.setup(), 120_000);
  afterAll(() => adapter.teardown(), 60_000);

  it('gives a session to one run at a time, and to the next once the first lets go', async () => {
    const { lease } = adapter.ports();
    const first = await adapter.newRun();
    const second = await adapter.newRun(first.sessionId);
    expect(await lease.claim(first.sessionId, first.runId)).toBe(true);
    // Claiming again for the same run keeps it.
    expect(await lease.claim(first.sessionId, first.runId)).toBe(true);
    expect(await lease.claim(second.sessionId, second.runId)).toBe(false);
    // A late release naming another run leaves the hold alone.
    await lease.release(first.sessionId, second.runId);
    expect(await lease.claim(second.sessionId, second.runId)).toBe(false);
    await lease.release(first.sessionId, first.runId);
    expect(await lease.claim(second.sessionId, second.runId)).toBe(true);
    await lease.release(second.sessionId, second.runId);
  });

  it('claims a run as claim does; where instances share sessions, refuses a run over its user’s quota, counted over them', async () => {
    const { lease } = adapter.ports();
    const quota = { owner: `user-${crypto.randomUUID()}`, limit: 1 };
    const first = await adapter.newRun();
    const second = await adapter.newRun();
    expect(await lease.claimRun(first.sessionId, first.runId, quota)).toBe('claimed');
    const next = await adapter.newRun(first.sessionId);
    expect(await lease.claimRun(first.sessionId, next.runId, undefined)).toBe('held');
    // One process counts a user's runs in its run slots, not here.
    expect(await lease.claimRun(second.sessionId, second.runId, quota)).toBe(adapter.shared ? 'at_limit' : 'claimed');
    expect(await lease.claimRun(second.sessionId, second.runId, { owner: `user-${crypto.randomUUID()}`, limit: 1 })).toBe('claimed');
    await lease.release(second.sessionId, second.runId);
    // Once the first run lets go, the user may start another.
    await lease.release(first.sessionId, first.runId);
    expect(await lease.claimRun(second.sessionId, second.runId, quota)).toBe('claimed');
    await lease.release(second.sessionId, second.runId);
  });

  it('holds a session for a command (no run), and a run may start inside it', async () => {
    const { lease } = adapter.ports();
    const run = await adapter.newRun();
    expect(await lease.claim(run.sessionId, null)).toBe(true);
    expect(await lease.claim(run.sessionId, run.runId)).toBe(true);
    await lease.release(run.sessionId, run.runId);
  });

  it('lets a session go at once on a hand-over: the run goes on where it is taken over, and only several instances keep other runs out meanwhile', async () => {
    const { lease } = adapter.ports();
    const first = await adapter.newRun();
    const next = await adapter.newRun(first.sessionId);
    expect(await lease.claim(first.sessionId, first.runId)).toBe(true);
    await lease.letGo(first.sessionId);
    if (adapter.shared) {
      // The run is still going: a message or command arriving before an instance took it over must not take its session.
      expect(await lease.claim(next.sessionId, next.runId)).toBe(false);
      expect(await lease.claim(first.sessionId, null)).toBe(false);
      expect(await lease.claim(first.sessionId, first.runId)).toBe(true);
      await lease.release(first.sessionId, first.runId);
    }
    expect(await lease.claim(next.sessionId, next.runId)).toBe(true);
    await lease.release(next.sessionId, next.runId);
  });

  it.runIf(adapter.shared)('refuses a session another instance holds, and gives it once that instance releases it', async () => {
    const { lease } = adapter.ports();
    const other = adapter.other!().lease;
    const run = await adapter.newRun();
    expect(await other.claim(run.sessionId, run.runId)).toBe(true);
    expect(await lease.claim(run.sessionId, null)).toBe(false);
    expect(await lease.claimRun(run.sessionId, (await adapter.newRun(run.sessionId)).runId, undefined)).toBe('held');
    await other.release(run.sessionId, run.runId);
    expect(await lease.claim(run.sessionId, null)).toBe(true);
    await lease.release(run.sessionId, null);
  });
});
