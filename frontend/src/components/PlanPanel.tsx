import type { PlanStep, PlanTrigger } from '@stepwise/shared-types';
import { eventsOf } from '../state/strategy-events.ts';
import { BranchCard } from './BranchCard.tsx';
import type { StrategyPanelProps } from './strategy-panels.ts';

const TRIGGER_WORDS: Record<PlanTrigger, string> = {
  failed_attempts: 'a step failed after its attempts',
  missing_prerequisite: 'a step found something missing',
  not_viable: 'the plan no longer looked viable',
  message: 'a message sent during the run changed what was asked',
};

/** What a revision changed: the goals it dropped and the ones it added. */
function changes(before: PlanStep[], after: PlanStep[]): string {
  const old = new Set(before.map((step) => step.goal));
  const now = new Set(after.map((step) => step.goal));
  const added = after.filter((step) => !old.has(step.goal)).length;
  const dropped = before.filter((step) => !now.has(step.goal)).length;
  return `${added} step${added === 1 ? '' : 's'} added, ${dropped} dropped`;
}

/**
 * A plan_execute run: the plan as a live checklist (each step's status as its events arrive), the
 * re-plans as revisions saying why and what changed, each step's iterations folded under it, and
 * the run's summary once it is there.
 */
export function PlanPanel({ run, running }: StrategyPanelProps) {
  const plans = eventsOf(run, 'agent_plan');
  const latest = plans.at(-1);
  const stepEvents = eventsOf(run, 'agent_plan_step').filter((step) => !latest || step.seq > latest.seq);
  const status = new Map<number, { status: string; attempts: number }>();
  for (const { event } of stepEvents) status.set(event.index, { status: event.status, attempts: event.attempts });
  const metadata = eventsOf(run, 'agent_run_metadata').at(0)?.event;
  const summary = metadata?.summary;
  // `planning.revisions` counts the plans made, the first included: re-plans are the others.
  const replans = Math.max(0, (metadata?.planning.revisions ?? plans.length) - 1);
  return (
    <div className="plan-panel" data-testid="plan-panel">
      {latest ? (
        <section aria-label="Plan" data-testid="plan-checklist">
          <strong>Plan{plans.length > 1 ? ` (revision ${latest.event.revision})` : ''}</strong>
          {latest.event.steps.length === 0 ? (
            <p>No steps were needed: answered directly.</p>
          ) : (
            <ol>
              {latest.event.steps.map((step) => {
                const live = status.get(step.index);
                const state = live?.status ?? step.status;
                return (
                  <li key={step.index} data-testid="plan-step" data-status={state}>
                    <span className={`badge branch-status branch-${state}`}>{state}</span> {step.goal}
                    {step.tools.length > 0 && <small> · {step.tools.join(', ')}</small>}
                    {live && live.attempts > 1 && <small> · {live.attempts} attempts</small>}
                  </li>
                );
              })}
            </ol>
          )}
        </section>
      ) : (
        running && <p data-testid="plan-checklist">Planning…</p>
      )}
      {plans.slice(1).map((plan, at) => (
        <p key={plan.seq} className="plan-revision" data-testid="plan-revision">
          Revision {plan.event.revision}: re-planned because {plan.event.trigger ? TRIGGER_WORDS[plan.event.trigger] : String(plan.event.trigger)} ·{' '}
          {changes(plans[at]!.event.steps, plan.event.steps)}
        </p>
      ))}
      {run.branches.map((branch) => (
        <BranchCard key={branch.nodeId} run={run} branch={branch} running={running} />
      ))}
      {summary && (
        <p className="plan-summary" data-testid="plan-summary">
          {summary.succeeded} of {summary.steps_total} step{summary.steps_total === 1 ? '' : 's'} done
          {summary.failed > 0 ? `, ${summary.failed} failed` : ''} · {summary.tool_attempts} tool call{summary.tool_attempts === 1 ? '' : 's'} ·{' '}
          {replans === 0 ? 'no re-plan' : `${replans} re-plan${replans === 1 ? '' : 's'}`}
        </p>
      )}
    </div>
  );
}
