// The LogFanOut port: the instances that share sessions hear of each other's writes to a session's
// log (a notice, or a streaming preview), never of their own; in one process nothing is heard.
// One suite over its adapters: one process, and instances on Redis. Restate keeps the fan-out of
// the process or cluster beneath it (see run-host-contract).
import { randomUUID } from 'node:crypto';
import type { SessionNotice } from '@stepwise/backend';
import type { DeltaEvent } from '@stepwise/shared-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostingsUnderTest } from '../helpers/hostings.ts';

const delta: DeltaEvent = { type: 'delta', run_id: randomUUID(), phase: 'reason', step: 1, content: 'Oslo' } as unknown as DeltaEvent;

describe.each(hostingsUnderTest({ restate: false }))('the log fan-out $name', (adapter) => {
  beforeAll(() => adapter.setup(), 120_000);
  afterAll(() => adapter.teardown(), 60_000);

  it('tells the followers on other instances that a log grew and passes previews on, never back to their sender, until they unfollow', async () => {
    const { fanOut } = adapter.ports();
    const sessionId = randomUUID();
    const here: SessionNotice[] = [];
    const there: SessionNotice[] = [];
    const heard = (notices: SessionNotice[]) => (notice: SessionNotice) => {
      // A look comes now and then whatever was written: it says nothing of a write.
      if (notice.kind !== 'look') notices.push(notice);
    };
    const unfollowHere = await fanOut.follow(sessionId, heard(here));
    const other = adapter.other?.().fanOut;
    const unfollowThere = await other?.follow(sessionId, heard(there));
    fanOut.notify(sessionId);
    fanOut.publishPreview(sessionId, delta, 7);
    if (other) {
      await expect.poll(() => there, { timeout: 10_000 }).toEqual([{ kind: 'appended' }, { kind: 'preview', delta, afterSeq: 7 }]);
      // And the other way round.
      other.notify(sessionId);
      await expect.poll(() => here, { timeout: 10_000 }).toEqual([{ kind: 'appended' }]);
    } else {
      expect(here).toEqual([]);
    }
    unfollowHere();
    unfollowThere?.();
    const before = there.length;
    fanOut.notify(sessionId);
    other?.notify(sessionId);
    expect(there.length).toBe(before);
  });

  it.runIf(adapter.shared)('looks at a followed log now and then, so a notice lost on its way delays nothing for long', async () => {
    const { fanOut } = adapter.ports();
    let looks = 0;
    const unfollow = await fanOut.follow(randomUUID(), (notice) => {
      if (notice.kind === 'look') looks++;
    });
    try {
      await expect.poll(() => looks, { timeout: 10_000 }).toBeGreaterThan(0);
    } finally {
      unfollow();
    }
  });
});
