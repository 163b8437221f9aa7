import type { StrategyEventView } from '../state/view-state.ts';
import { BranchCard } from './BranchCard.tsx';
import type { StrategyPanelProps } from './strategy-panels.ts';

interface PlanStepField {
  index: number;
  goal: string;
  tools?: string[];
  status: string;
}

const TRIGGER_WORDS: Record<string, string> = {
  failed_attempts: 'a step failed after its attempts',
  missing_prerequisite: 'a step found something missing',
  not_viable: 'the plan no longer looked viable',
};

function stepsOf(event: StrategyEventView): PlanStepField[] {
  return Array.isArray(event.fields.steps) ? (event.fields.steps as PlanStepField[]) : [];
}

/** What a revision changed: the goals it dropped and the ones it added. */
function changes(before: PlanStepField[], after: PlanStepField[]): string {
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
  const plans = run.strategyEvents.filter((event) => event.updateType === 'agent_plan');
  const latest = plans.at(-1);
  const stepEvents = run.strategyEvents.filter((event) => event.updateType === 'agent_plan_step' && (!latest || event.seq > latest.seq));
  const status = new Map<number, { status: string; attempts: number }>();
  for (const event of stepEvents) status.set(Number(event.fields.index), { status: String(event.fields.status), attempts: Number(event.fields.attempts ?? 0) });
  const metadata = run.strategyEvents.find((event) => event.updateType === 'agent_run_metadata');
  const summary = metadata?.fields.summary as { steps_total: number; succeeded: number; failed: number; tool_attempts: number } | undefined;
  // `planning.revisions` counts the plans made, the first included: re-plans are the others.
  const replans = Math.max(0, Number((metadata?.fields.planning as { revisions?: number } | undefined)?.revisions ?? plans.length) - 1);
  return (
    <div className="plan-panel" data-testid="plan-panel">
      {latest ? (
        <section aria-label="Plan" data-testid="plan-checklist">
          <strong>Plan{plans.length > 1 ? ` (revision ${String(latest.fields.revision)})` : ''}</strong>
          {stepsOf(latest).length === 0 ? (
            <p>No steps were needed: answered directly.</p>
          ) : (
            <ol>
              {stepsOf(latest).map((step) => {
                const live = status.get(step.index);
                const state = live?.status ?? step.status;
                return (
                  <li key={step.index} data-testid="plan-step" data-status={state}>
                    <span className={`badge branch-status branch-${state}`}>{state}</span> {step.goal}
                    {step.tools && step.tools.length > 0 && <small> · {step.tools.join(', ')}</small>}
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
          Revision {String(plan.fields.revision)}: re-planned because {TRIGGER_WORDS[String(plan.fields.trigger)] ?? String(plan.fields.trigger)} ·{' '}
          {changes(stepsOf(plans[at]!), stepsOf(plan))}
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
