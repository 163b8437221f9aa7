import type { RunEnd, RunView } from '../state/view-state.ts';
import { StepCard } from './StepCard.tsx';

/** How a run ended, in words. */
export function describeEnd(end: RunEnd): string {
  switch (end.kind) {
    case 'answered':
      return `Answered in ${end.steps} step${end.steps === 1 ? '' : 's'}`;
    case 'max_steps':
      return `Max steps reached (${end.steps}): best answer so far`;
    case 'stopped':
      return end.reason === 'user' ? 'Stopped' : `Stopped (${end.reason.replace(/_/g, ' ')})`;
    case 'input_timeout':
      return 'Input timed out: the question was not answered in time';
    case 'failed':
      return `Failed: ${end.message}`;
    default: {
      const unexpected: never = end;
      return String(unexpected);
    }
  }
}

/** A run's steps, live, and how it ended. */
export function RunTimeline({ run }: { run: RunView }) {
  const running = !run.end && !run.complete;
  const lastStep = run.steps.at(-1)?.step;
  return (
    <div className="run" aria-label="Agent run" data-testid="run">
      {run.steps.map((step) => (
        <StepCard
          key={step.step}
          step={step}
          maxSteps={run.maxSteps}
          current={running && step.step === lastStep}
          folded={run.complete && run.replayed === true}
        />
      ))}
      {run.end && (
        <div className={`run-end run-end-${run.end.kind}`} role="status" data-testid="run-end">
          {describeEnd(run.end)}
        </div>
      )}
    </div>
  );
}
