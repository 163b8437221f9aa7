/**
 * A research task's id: its stage's id, a dot, its number in the stage ("1.4" is task 4 of stage 1).
 * The one place that knows the format; everything else builds, reads and checks ids through these.
 */

/** A stage id: a number, e.g. "1". */
export const STAGE_ID = /^\d+$/;
/** A task id: STAGE.N, e.g. "1.2". */
export const TASK_ID = /^\d+\.\d+$/;

/** Task `n` of stage `stageId` ("1", 4 → "1.4"). */
export function taskId(stageId: string, n: number): string {
  return `${stageId}.${n}`;
}

/** A task id's stage and number; undefined when `id` is not a task id. */
export function parseTaskId(id: string): { stage: string; n: number } | undefined {
  if (!isTaskId(id)) return undefined;
  const [stage, n] = id.split('.') as [string, string];
  return { stage, n: Number(n) };
}

/** Whether `id` is a task id (STAGE.N). */
export function isTaskId(id: string): boolean {
  return TASK_ID.test(id);
}
