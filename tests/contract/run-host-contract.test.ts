// The RunHost port: where runs live over a process's life (runs arriving, runs found going at
// startup, what the shared dependencies say, what a shutdown does). One suite, three adapters: one
// process, an instance among several (PostgreSQL, Redis), and runs that live in Restate workflows.
import { type ArrivingRun, inProcessHosting, restateHosting, type RestateEngine } from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterUnderTest, hostingsUnderTest } from '../helpers/hostings.ts';

describe.each(hostingsUnderTest({ restate: true }))('the run host $name', (adapter) => {
  const arrived: ArrivingRun[] = [];
  beforeAll(async () => {
    await adapter.setup();
    // The chat layer's arrival handler: here it records the run and closes it (nothing to set up).
    adapter.ports().host.onRunArrived(async (run) => {
      arrived.push(run);
      return 'closed';
    });
  }, 120_000);
  afterAll(() => adapter.teardown(), 60_000);

  it('says which of its dependencies answer (none in one process)', async () => {
    const health = await adapter.ports().host.health();
    expect(Object.keys(health).sort()).toEqual(adapter.dependencies);
    expect(Object.values(health).every((up) => up === true)).toBe(true);
  });

  it('goes on at startup with a run left going; a durable run arrives through the arrival handler, and once its execution has ended it is closed', async () => {
    const { host, lease } = adapter.ports();
    const run = await adapter.newRun();
    expect(await host.interrupted(run)).toBe('go_on');
    if (!adapter.arrivesAfterStartup) {
      await lease.release(run.sessionId, run.runId);
      expect(arrived).toEqual([]);
      return;
    }
    // Restate executes the run's workflow, which asks this process to set the run up.
    await expect.poll(() => arrived, { timeout: 60_000 }).toContainEqual({ sessionId: run.sessionId, runId: run.runId });
    // The handler closed it, so its workflow ended: the next startup closes it rather than going on.
    await expect.poll(() => host.interrupted(run), { timeout: 60_000 }).toBe('close');
  });

  // Last: once drained, no run starts executing here any more.
  it('hands runs over at shutdown when they go on elsewhere or later, and stops them otherwise', () => {
    expect(adapter.ports().host.drain()).toBe(adapter.handsOver ? 'hand_over' : 'stop');
  });
});

describe('Restate over the ports beneath it', () => {
  it('is its own run host and router only: the lease, the fan-out and the control bus stay those beneath', () => {
    const base = inProcessHosting();
    const restate = restateHosting(base, { onAdopt() {} } as unknown as RestateEngine);
    expect(restate.lease).toBe(base.lease);
    expect(restate.fanOut).toBe(base.fanOut);
    expect(restate.controlBus).toBe(base.controlBus);
    expect(restate.host).not.toBe(base.host);
    expect(restate.router).not.toBe(base.router);
  });
});

// A short lease, so that each instance looks for orphans several times a second.
const cluster = clusterUnderTest({ leaseMs: 600 });

describe.skipIf(!cluster)('instances handing runs over at shutdown (PostgreSQL, Redis)', () => {
  beforeAll(() => cluster!.setup(), 60_000);
  afterAll(() => cluster!.teardown(), 60_000);

  it('an instance that drained takes back no run it let go: another instance takes it over', async () => {
    const a = cluster!.ports();
    const b = cluster!.other!();
    const onA: ArrivingRun[] = [];
    const onB: ArrivingRun[] = [];
    a.host.onRunArrived(async (run) => {
      onA.push(run);
      return 'resumed';
    });
    const run = await cluster!.newRun();
    expect(await a.lease.claim(run.sessionId, run.runId)).toBe(true);
    // Shutting down: A drains, then lets its session go for another instance to go on with.
    a.host.drain();
    await a.lease.letGo(run.sessionId);
    b.host.onRunArrived(async (arriving) => {
      onB.push(arriving);
      return 'resumed';
    });
    await expect.poll(() => onB, { timeout: 60_000 }).toEqual([run]);
    expect(onA).toEqual([]);
    await b.lease.release(run.sessionId, run.runId);
  });
});
