import type { RunView, StepView } from './view-state.ts';

/** A run the view has just heard of: no steps, no branches, no strategy events yet. */
export function emptyRun(id: string): RunView {
  return { id, maxSteps: 0, steps: [], branches: [], strategyEvents: [], complete: false };
}

/** A step nobody has reported anything of yet. */
export function emptyStep(step: number): StepView {
  return { step, reason: '', reasonDone: false, tools: [], observe: '', observeDone: false };
}

/**
 * Changes one step of a run, made when missing: outside any branch when `nodeId` is absent, else in
 * that branch (made when missing too). Steps stay in step order, branches in node order.
 */
export function updateRunStep(run: RunView, stepNumber: number, nodeId: string | undefined, change: (step: StepView) => StepView): RunView {
  if (nodeId === undefined) return { ...run, steps: changeStep(run.steps, stepNumber, change) };
  const tree = withBranch(run, nodeId);
  return {
    ...tree,
    branches: tree.branches.map((branch) => (branch.nodeId === nodeId ? { ...branch, steps: changeStep(branch.steps, stepNumber, change) } : branch)),
  };
}

/** The run with a branch for `nodeId`, empty when it had none (a strategy event may name a branch before its first step). */
export function withBranch(run: RunView, nodeId: string): RunView {
  if (run.branches.some((branch) => branch.nodeId === nodeId)) return run;
  return { ...run, branches: [...run.branches, { nodeId, steps: [] }].sort((a, b) => compareNodeIds(a.nodeId, b.nodeId)) };
}

/** Changes every step of a run, in and out of branches. */
export function mapRunSteps(run: RunView, change: (step: StepView) => StepView): RunView {
  return {
    ...run,
    steps: run.steps.map(change),
    branches: run.branches.map((branch) => ({ ...branch, steps: branch.steps.map(change) })),
  };
}

/** Every step of a run with the branch it belongs to: the steps outside branches first. */
export function allSteps(run: RunView): Array<{ step: StepView; nodeId?: string }> {
  return [...run.steps.map((step) => ({ step })), ...run.branches.flatMap((branch) => branch.steps.map((step) => ({ step, nodeId: branch.nodeId })))];
}

/** A run that ended early: whatever still ran, or waited for an answer, was cut off. */
export function settleRun(run: RunView): RunView {
  return mapRunSteps(run, settleStep);
}

/** A step that was cut off: its running calls stopped, its pending question no longer waits. */
export function settleStep(step: StepView): StepView {
  return {
    ...step,
    tools: step.tools.map((tool) => (tool.status === 'running' ? { ...tool, status: 'stopped' } : tool)),
    ...(step.question?.status === 'pending' ? { question: { ...step.question, status: 'stopped' } } : {}),
  };
}

/** Orders node ids the way people count: "2" before "10", "1.2" before "1.10" and before "2". */
export function compareNodeIds(a: string, b: string): number {
  const left = a.split('.');
  const right = b.split('.');
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const x = left[index];
    const y = right[index];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const order = /^\d+$/.test(x) && /^\d+$/.test(y) ? Number(x) - Number(y) : x.localeCompare(y);
    if (order !== 0) return order;
  }
  return 0;
}

function changeStep(steps: StepView[], stepNumber: number, change: (step: StepView) => StepView): StepView[] {
  const index = steps.findIndex((step) => step.step === stepNumber);
  const next = index >= 0 ? steps.with(index, change(steps[index]!)) : [...steps, change(emptyStep(stepNumber))];
  return next.sort((a, b) => a.step - b.step);
}
