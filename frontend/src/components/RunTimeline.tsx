import type { StoppedCall } from '@stepwise/shared-types';
import { Fragment, lazy, Suspense, useState } from 'react';
import { useSteering } from '../lib/steering-context.ts';
import { waitingSteers } from '../state/steering.ts';
import { formatClock, formatDuration, formatFull } from '../lib/time.ts';
import { toolInWords } from '../lib/tool-words.ts';
import { isStepFolded } from '../state/step-summary.ts';
import type { RunEnd, RunView, SteerView } from '../state/view-state.ts';
import { RunSpending } from './RunSpending.tsx';
import { RunTree } from './RunTree.tsx';
import { StepCard } from './StepCard.tsx';
import { SteerNote, WaitingMessages } from './SteerNotes.tsx';
import { strategyPanels } from './strategy-panels.ts';

// The timeline, the cost chart and the comparison load when first unfolded.
const RunTimelineChart = lazy(() => import('./RunInsights.tsx').then((module) => ({ default: module.RunTimelineChart })));
const RunCostChart = lazy(() => import('./RunInsights.tsx').then((module) => ({ default: module.RunCostChart })));
const CompareRuns = lazy(() => import('./RunInsights.tsx').then((module) => ({ default: module.CompareRuns })));

/** How a run ended, in words. */
/** Endings that wait on the person (a verifier's doubts, a cycle or loop limit, one wave done): never shown as a success. */
const NEEDS_YOU: Record<string, string> = {
  verifier_blocked: 'Needs you: the verifier has doubts; follow-up tasks were added. Send a message to go on',
  max_cycles: 'Stopped at the cycle limit: not finished. Send a message to go on',
  max_loops: 'Stopped at the loop limit without a final answer',
  wave_complete: 'One wave done (step mode): send a message for the next',
  budget: 'Stopped at the cost budget: the next model call would have passed it. Continue with a larger budget to go on',
};

const RECEIPT_WORDS: Record<string, string> = {
  completed: 'completed',
  cancelled: 'cancelled',
  not_started: 'not started',
  unknown: 'unknown (it did not stop in time)',
};

/** The class of an ending: answered (green) only when the run answered. */
export function endClass(end: RunEnd): string {
  return end.kind === 'answered' && end.reason && NEEDS_YOU[end.reason] ? 'needs-you' : end.kind;
}

export function describeEnd(end: RunEnd): string {
  switch (end.kind) {
    case 'answered':
      if (end.reason && NEEDS_YOU[end.reason]) return `${NEEDS_YOU[end.reason]} (after ${end.steps} step${end.steps === 1 ? '' : 's'})`;
      return end.reason
        ? `Finished (${end.reason.replace(/_/g, ' ')}) after ${end.steps} step${end.steps === 1 ? '' : 's'}`
        : `Answered in ${end.steps} step${end.steps === 1 ? '' : 's'}`;
    case 'unresolved':
      return `Could not answer: ${end.summary}`;
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

/**
 * A run's header, its steps (live), and how it ended. A roa run shows its steps; a strategy's run
 * shows the strategy's panel when one is registered, else the generic tree of branches and events.
 */
export function RunTimeline({
  run,
  now,
  strategyLabel,
  traceUrl,
  onContinue,
  continueSteps = 5,
  onRewind,
  compareWith,
  rolledBack,
}: {
  run: RunView;
  /** The conversation was rolled back to before this run. */
  rolledBack?: boolean;
  now: Date;
  strategyLabel?: string;
  /** Where the run's trace can be seen (TRACE_URL_TEMPLATE), when runs are traced. */
  traceUrl?: string;
  /** Offered under the chat's last run when it stopped, failed or reached its step limit. */
  onContinue?: (extraSteps: number, maxCostUsd?: number) => void;
  continueSteps?: number;
  /** Offered on the finished steps of an ended run: go back to that step's end and on from there. */
  onRewind?: (step: number) => void;
  /** The branch this run can be compared with (the run before a rewind or a rollback), and each run's answer. */
  compareWith?: { run: RunView; answers: Record<string, string | undefined> };
}) {
  // A parked run is not at work: it waits for an answer.
  const running = !run.end && !run.complete && !run.parked;
  // A run the conversation went back from no longer ends as it did: it says where it was rolled back to.
  const rolledBackTo =
    run.rewoundTo !== undefined ? `Rolled back to step ${run.rewoundTo}` : rolledBack ? 'Rolled back: no longer part of the conversation' : undefined;
  const Panel = run.strategy ? strategyPanels[run.strategy] : undefined;
  const tree = run.branches.length > 0 || run.strategyEvents.length > 0;
  const lastStep = run.steps.at(-1)?.step;
  const steers = run.steers ?? [];
  const steering = useSteering();
  const waiting = waitingSteers(steering?.pending ?? [], run.id, steering?.activeRunId);
  const shownSteps = run.steps.filter((step) => run.rewoundTo === undefined || step.step <= run.rewoundTo);
  // A message that reached the run shows where it landed: before the step whose reasoning read it,
  // or after the step in which a later call (act, observe) read it.
  const readAfterReason = (steer: SteerView) =>
    run.timeline?.some((event) => event.kind === 'agent_reason' && event.step === steer.step && !event.nodeId && event.seq < steer.seq) ?? false;
  const placeOf = (steer: SteerView) => steer.step + (readAfterReason(steer) ? 0.5 : -0.5);
  const steersBetween = (after: number, before: number) => steers.filter((steer) => !steer.nodeId && placeOf(steer) > after && placeOf(steer) < before);
  const took = run.startedAt && run.endedAt ? Date.parse(run.endedAt) - Date.parse(run.startedAt) : undefined;
  return (
    <div className="run" aria-label="Agent run" data-testid="run">
      <div className="run-head">
        <span className="run-title">Agent run</span>
        {run.strategy && run.strategy !== 'roa' && (
          <span className="badge run-strategy" data-testid="run-strategy">
            {strategyLabel ?? run.strategy}
          </span>
        )}
        {run.resumedFrom && (
          <span className="badge run-continued" data-testid="run-continued" title="This run goes on from the run above; its earlier steps are shown there">
            continued
          </span>
        )}
        {run.startedAt && (
          <time dateTime={run.startedAt} title={formatFull(run.startedAt)}>
            {formatClock(run.startedAt, now)}
          </time>
        )}
        {traceUrl && (
          <a className="run-trace" data-testid="run-trace" href={traceUrl} target="_blank" rel="noopener noreferrer" title="This run's trace (OpenTelemetry)">
            trace
          </a>
        )}
        {run.maxSteps > 0 && (
          <span className="run-budget" data-testid="run-budget" title="The most steps this run may take (Max iterations)">
            budget: {run.maxSteps} step{run.maxSteps === 1 ? '' : 's'}
          </span>
        )}
        <RunSpending spending={run.spending} />
      </div>
      {Panel ? (
        <Suspense fallback={<p className="muted">Loading…</p>}>
          <Panel run={run} running={running} now={now} />
        </Suspense>
      ) : tree ? (
        <RunTree run={run} running={running} />
      ) : (
        <>
          {shownSteps.map((step, index) => (
            <Fragment key={step.step}>
              {steersBetween(shownSteps[index - 1]?.step ?? Number.NEGATIVE_INFINITY, step.step).map((steer) => (
                <SteerNote key={steer.messageId} steer={steer} />
              ))}
              <StepCard
                step={step}
                running={running}
                current={running && step.step === lastStep}
                folded={isStepFolded(run, step)}
                {...(onRewind && !running ? { onRewind: () => onRewind(step.step) } : {})}
              />
            </Fragment>
          ))}
          {steersBetween(shownSteps.at(-1)?.step ?? Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY).map((steer) => (
            <SteerNote key={steer.messageId} steer={steer} />
          ))}
          {run.rewoundTo !== undefined && run.steps.some((step) => step.step > run.rewoundTo!) && (
            <details className="rolled-back rewound-steps" data-testid="rewound-steps">
              <summary>
                Steps after step {run.rewoundTo}: rolled back (the conversation was rewound to step {run.rewoundTo})
              </summary>
              {run.steps
                .filter((step) => step.step > run.rewoundTo!)
                .map((step) => (
                  <StepCard key={step.step} step={step} running={false} current={false} folded={true} />
                ))}
            </details>
          )}
        </>
      )}
      {run.parked && !run.end && (
        <div className="run-end run-end-needs-you run-parked" role="status" data-testid="run-parked">
          Waiting for you: nobody answered in time, so this run is parked. It holds nothing while it waits; answer to go on from here, or stop it.
        </div>
      )}
      {(Panel || tree) && steers.map((steer) => <SteerNote key={steer.messageId} steer={steer} strategy={run.strategy} />)}
      {running && <WaitingMessages messages={waiting} label="Messages waiting for this run" strategy={run.strategy} />}
      {run.end && (
        <div className={`run-end run-end-${rolledBackTo ? 'needs-you' : endClass(run.end)}`} role="status" data-testid="run-end">
          {rolledBackTo ?? describeEnd(run.end)}
          {took !== undefined && took >= 0 && <span className="run-took"> · {formatDuration(took)}</span>}
        </div>
      )}
      {run.end?.kind === 'stopped' && run.end.calls && (
        <p className="stop-receipt" data-testid="stop-receipt">
          {receiptLine(run, run.end.calls)}
        </p>
      )}
      {(run.timeline?.length ?? 0) > 1 && (
        <Suspense fallback={null}>
          <div className="run-insights">
            <details className="insight" data-testid="timeline-toggle">
              <summary>Timeline</summary>
              <RunTimelineChart run={run} />
            </details>
            {run.timeline?.some((event) => event.kind === 'agent_usage') && (
              <details className="insight" data-testid="cost-toggle">
                <summary>Tokens and cost by purpose</summary>
                <RunCostChart run={run} />
              </details>
            )}
            {compareWith && run.end && (
              <details className="insight" data-testid="compare-toggle">
                <summary>Compare with the branch before</summary>
                <CompareRuns before={compareWith.run} after={run} answers={compareWith.answers} />
              </details>
            )}
          </div>
        </Suspense>
      )}
      {onContinue && <ContinueRun steps={continueSteps} onContinue={onContinue} budget={run.end?.kind === 'answered' && run.end.reason === 'budget'} />}
    </div>
  );
}

/** A stop receipt in words: each call of the step it cut and what became of it ("Calculator: cancelled · Write file out.txt: completed"). */
export function receiptLine(run: RunView, calls: StoppedCall[]): string {
  return calls.map((call) => `${toolInWords(call.tool)}${describeCall(run, call.tool_call_id)}: ${RECEIPT_WORDS[call.status] ?? call.status}`).join(' · ');
}

/** The argument that names a call best in a receipt: ` out.txt` for a file, nothing otherwise. */
function describeCall(run: RunView, toolCallId: string): string {
  for (const step of [...run.steps, ...run.branches.flatMap((branch) => branch.steps)]) {
    const tool = step.tools.find((each) => each.id === toolCallId);
    const name = tool?.arguments.name;
    if (typeof name === 'string') return ` ${name}`;
  }
  return '';
}

/** "Continue N more steps": the run goes on where it ended, its done steps not made again. */
function ContinueRun({ steps, onContinue, budget }: { steps: number; onContinue: (extraSteps: number, maxCostUsd?: number) => void; budget?: boolean }) {
  const [extra, setExtra] = useState(steps);
  const [usd, setUsd] = useState('1');
  return (
    <div className="run-continue" data-testid="run-continue">
      <button
        type="button"
        onClick={() => onContinue(extra, budget ? Math.max(0.000001, Number(usd) || 0) : undefined)}
        title="Go on from where this run ended; what it did is not done again"
      >
        Continue
      </button>
      <label>
        <input
          type="number"
          min={1}
          max={50}
          value={extra}
          aria-label="More steps"
          onChange={(event) => setExtra(Math.max(1, Math.min(50, Number(event.target.value) || 1)))}
        />{' '}
        more step{extra === 1 ? '' : 's'}
      </label>
      {budget && (
        <label>
          with a budget of $
          <input type="number" min={0} step="any" value={usd} aria-label="New cost budget in USD" onChange={(event) => setUsd(event.target.value)} />
        </label>
      )}
    </div>
  );
}
