import type { SolverStage } from '@stepwise/shared-types';
import { eventsOf } from '../state/strategy-events.ts';
import type { RunView } from '../state/view-state.ts';
import { CopyableSnippet } from './CopyableSnippet.tsx';
import { Markdown } from './Markdown.tsx';
import type { StrategyPanelProps } from './strategy-panels.ts';
import { ToolCallCard } from './ToolCallCard.tsx';

const STAGE_LABELS: Record<SolverStage, string> = {
  approach_proposer: 'Approaches',
  approach_evaluator: 'Approach chosen',
  problem_solver: 'Solver',
  expert_evaluator: 'Expert check',
  orchestrator: 'Orchestrator',
};
const APPROACH_STAGES: SolverStage[] = ['approach_proposer', 'approach_evaluator'];
const LOOP_STAGES: SolverStage[] = ['problem_solver', 'expert_evaluator', 'orchestrator'];

interface StageRun {
  stage: SolverStage;
  loop: number;
  step: number;
  content?: string;
  done: boolean;
}

/** The stages as they ran, in order: each start, with its output once it completed. */
function stagesOf(run: RunView): StageRun[] {
  const stages: StageRun[] = [];
  for (const { event } of run.strategyEvents) {
    if (event?.update_type === 'agent_stage_start') {
      stages.push({ stage: event.stage, loop: event.loop, step: stages.length + 1, done: false });
    } else if (event?.update_type === 'agent_stage_complete') {
      const open = stages.findLast((candidate) => candidate.stage === event.stage && !candidate.done);
      if (open) Object.assign(open, { done: true, content: event.content });
    }
  }
  return stages;
}

/**
 * A solver run: the pipeline of the current loop (each stage done, running or next, with the loop
 * counter), then every stage's output in order (the solver's tool cards under it), and each
 * orchestrator decision rendered, its JSON copyable. Confirmations are answered with the Yes / No
 * buttons of the question banner; snapshots, rollback and resume are in the Snapshots dialog.
 */
export function SolverPanel({ run, running }: StrategyPanelProps) {
  const stages = stagesOf(run);
  const decisions = eventsOf(run, 'agent_decision');
  const current = stages.at(-1);
  const loop = current?.loop ?? 1;
  const maxLoops = Number(run.options?.max_loops ?? 3);
  const withApproaches = run.options?.approaches !== false;
  const pipeline: SolverStage[] = [...(withApproaches && loop === 1 ? APPROACH_STAGES : []), ...LOOP_STAGES];
  const stateOf = (stage: SolverStage) => {
    const ran = stages.filter((candidate) => candidate.stage === stage && (candidate.loop === loop || !LOOP_STAGES.includes(stage)));
    const last = ran.at(-1);
    if (!last) return 'next';
    return last.done ? 'done' : running ? 'running' : 'stopped';
  };
  return (
    <div className="solver-panel" data-testid="solver-panel">
      <ol className="stage-pipeline" aria-label={`Stages of loop ${loop}`} data-testid="stage-pipeline">
        {pipeline.map((stage) => {
          const state = stateOf(stage);
          return (
            <li key={stage} data-testid="pipeline-stage" data-stage={stage} data-state={state} className={`pipeline-stage pipeline-${state}`}>
              {STAGE_LABELS[stage]} <small>{state}</small>
            </li>
          );
        })}
        <li className="pipeline-loop" data-testid="loop-counter">
          loop {loop} of {maxLoops}
        </li>
      </ol>
      {stages.map((stage) => {
        const decision = stage.stage === 'orchestrator' ? decisions.find(({ event }) => event.loop === stage.loop)?.event : undefined;
        const tools = run.steps.find((step) => step.step === stage.step)?.tools ?? [];
        const preview = !stage.done ? run.steps.find((step) => step.step === stage.step)?.reason : undefined;
        return (
          <details
            key={stage.step}
            className="stage-output"
            data-testid="stage-output"
            data-stage={stage.stage}
            open={!stage.done || stage.stage === 'orchestrator'}
          >
            <summary>
              {STAGE_LABELS[stage.stage]} · loop {stage.loop}
              {!stage.done && running && ' · writing…'}
            </summary>
            {tools.map((tool) => (
              <ToolCallCard key={tool.id} tool={tool} />
            ))}
            {decision ? (
              <div className="decision" data-testid="decision" data-action={decision.action}>
                <p>
                  {/* A final decision of a run that could not answer is no success: said so, in the warning colour. */}
                  {decision.action === 'FINAL' && run.end?.kind === 'unresolved' ? (
                    <span className="badge decision-unresolved">FINAL · could not answer</span>
                  ) : (
                    <span className={`badge decision-${decision.action.toLowerCase()}`}>{decision.action}</span>
                  )}{' '}
                  {decision.rationale}
                </p>
                {decision.next_focus && <p>Next loop's focus: {decision.next_focus}</p>}
                {decision.question_for_user && <p>Question for you: {decision.question_for_user}</p>}
                <details className="show-json" data-testid="decision-json">
                  <summary>Show JSON</summary>
                  <CopyableSnippet label="The decision as JSON" text={stage.content ?? ''} />
                </details>
              </div>
            ) : stage.content !== undefined ? (
              <Markdown text={stage.content} />
            ) : (
              preview && <Markdown text={preview} />
            )}
          </details>
        );
      })}
    </div>
  );
}
