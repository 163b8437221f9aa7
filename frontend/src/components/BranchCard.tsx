import { useState } from 'react';
import { isStepFolded } from '../state/step-summary.ts';
import { branchEvents, branchStatus, branchTitle } from '../state/strategy-events.ts';
import type { BranchView, RunView } from '../state/view-state.ts';
import { StepCard } from './StepCard.tsx';
import { StrategyEventList } from './StrategyEventList.tsx';

/** One branch of a run (a plan step, a research task): its heading and status, its own events, its iterations. */
export function BranchCard({ run, branch, running }: { run: RunView; branch: BranchView; running: boolean }) {
  const title = branchTitle(run, branch.nodeId);
  const latest = branchStatus(run, branch.nodeId);
  // Once the run has ended, nothing in it is still running.
  const status = latest === 'running' && !running ? 'not finished' : latest;
  // A finished run rebuilt from the log shows its branches folded; the user's choice wins.
  const [chosen, setChosen] = useState<boolean | undefined>(undefined);
  const open = chosen ?? !(run.complete && run.replayed);
  const lastStep = branch.steps.at(-1)?.step;
  const working = running && status !== 'done' && status !== 'failed' && status !== 'stopped';
  return (
    <details className="branch" open={open} data-testid="branch" data-node-id={branch.nodeId}>
      <summary
        onClick={(event) => {
          event.preventDefault();
          setChosen(!open);
        }}
      >
        <span className="branch-title">{title}</span>
        {status && <span className={`badge branch-status branch-${status.replace(/\s+/g, '_')}`}>{status.replace(/_/g, ' ')}</span>}
      </summary>
      <StrategyEventList events={branchEvents(run, branch.nodeId)} label={`Events of ${title}`} />
      {branch.steps.map((step) => (
        <StepCard
          key={step.step}
          step={step}
          label={`Iteration ${step.step}`}
          running={running && status !== 'stopped'}
          current={working && step.step === lastStep}
          folded={isStepFolded(run, step, branch.steps)}
        />
      ))}
    </details>
  );
}
