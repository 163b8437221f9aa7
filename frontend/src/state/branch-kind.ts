/** What a branch of a run is: a step of a plan, or a task of a task graph (research). */
export type BranchKind = 'step' | 'task';

/**
 * The one place that decides a branch's kind: by its run's strategy (a plan's branches are steps,
 * research's are tasks); for any other strategy, or none known, by the id: a dotted one ("1.2") is a task.
 */
export function branchKind(strategy: string | undefined, nodeId: string): BranchKind {
  switch (strategy) {
    case 'plan_execute':
      return 'step';
    case 'research':
      return 'task';
    default:
      return nodeId.includes('.') ? 'task' : 'step';
  }
}

/** A branch as a heading names it: "Step 3", "Task 1.2". */
export function branchName(strategy: string | undefined, nodeId: string): string {
  return `${branchKind(strategy, nodeId) === 'step' ? 'Step' : 'Task'} ${nodeId}`;
}
