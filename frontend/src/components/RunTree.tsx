import { branchEvents } from '../state/strategy-events.ts';
import { isStepFolded } from '../state/step-summary.ts';
import type { RunView } from '../state/view-state.ts';
import { BranchCard } from './BranchCard.tsx';
import { StepCard } from './StepCard.tsx';
import { StrategyEventList } from './StrategyEventList.tsx';

/**
 * A run of a strategy without a panel of its own: the strategy's events, the steps outside any
 * branch, then each branch with its own steps.
 */
export function RunTree({ run, running }: { run: RunView; running: boolean }) {
  const lastStep = run.steps.at(-1)?.step;
  return (
    <>
      <StrategyEventList events={branchEvents(run, undefined)} label="Strategy events" />
      {run.steps.map((step) => (
        <StepCard key={step.step} step={step} running={running} current={running && step.step === lastStep} folded={isStepFolded(run, step)} />
      ))}
      {run.branches.map((branch) => (
        <BranchCard key={branch.nodeId} run={run} branch={branch} running={running} />
      ))}
    </>
  );
}
