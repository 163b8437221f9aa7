import { afterAll, beforeAll } from 'vitest';
import { startTestRestate } from '../../scripts/restate.mjs';

type TestRestate = Awaited<ReturnType<typeof startTestRestate>>;

/** A Restate server for the tests of this file (or describe block): started before them, stopped after. */
export function useRestate(): () => TestRestate {
  let restate: TestRestate | undefined;
  beforeAll(async () => {
    restate = await startTestRestate();
  }, 120_000);
  afterAll(async () => {
    await restate?.stop();
  }, 60_000);
  return () => {
    if (!restate) throw new Error('Restate has not started');
    return restate;
  };
}
