/**
 * Runs every cleanup step in order, each one even when a step before it failed (a failed test
 * leaves things half open), then reports the failures together.
 */
export async function closeAll(...steps: Array<(() => unknown) | undefined>): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    if (!step) continue;
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} cleanup steps failed`);
}
