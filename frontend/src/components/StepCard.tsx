import { useState } from 'react';
import { phaseText, stepSummary } from '../state/step-summary.ts';
import type { FallbackView, StepView } from '../state/view-state.ts';
import { AgentText } from './AgentText.tsx';
import { ConfirmButton } from './ConfirmButton.tsx';
import { ToolCallCard } from './ToolCallCard.tsx';

const QUESTION_STATUS = {
  pending: 'waiting for your answer',
  answered: 'answered',
  timed_out: 'no answer in time',
  stopped: 'not answered',
} as const;

/** What each phase is, for the headings' tooltips. */
export const PHASE_HINTS = {
  reason: 'Reason: the agent thinks about what it knows and plans this step',
  act: 'Act: the tools the agent called for this step, with their arguments and results',
  observe: 'Observe: the agent reads the results and decides whether it has the answer or needs another step',
} as const;

export interface StepCardProps {
  step: StepView;
  /** True while this is the step the run is working on. */
  current: boolean;
  /** True while the run goes on (or waits); false once it ended. */
  running: boolean;
  /** Whether the step shows folded until the user opens or closes it. */
  folded: boolean;
  /** What its badge says: "Step 2" by default, "Iteration 5" inside a branch. */
  label?: string;
  /** Offered on a finished step: roll the conversation back to this step's end and go on from there. */
  onRewind?: () => void;
}

/** One reason → act → observe step; folds to a one-line summary once a later step begins. */
export function StepCard({ step, current, running, folded, label = `Step ${step.step}`, onRewind }: StepCardProps) {
  const tools = step.tools.filter((tool) => tool.name !== 'request_input');
  // The user's choice wins over the automatic folding.
  const [chosen, setChosen] = useState<boolean | undefined>(undefined);
  const open = chosen ?? !folded;
  const reason = phaseText(step, 'reason');
  const observe = phaseText(step, 'observe');
  return (
    <details className={`step-card ${current ? 'step-current' : ''}`} open={open} data-testid="step-card">
      <summary
        onClick={(event) => {
          event.preventDefault();
          setChosen(!open);
        }}
      >
        <span className="step-badge">{label}</span>
        {current && !step.observeDone && <span className="spinner small" aria-label="in progress" />}
        {!open && (
          <span className="step-summary" data-testid="step-summary">
            {stepSummary(step)}
          </span>
        )}
      </summary>
      {/* A step that acted without reasoning first (a strategy's tool iteration) shows no empty Reason. */}
      {(reason || running || (tools.length === 0 && !step.question && !observe)) && (
        <section className="phase phase-reason" aria-label={`Reason, ${label.toLowerCase()}`}>
          <h4 title={PHASE_HINTS.reason}>Reason</h4>
          {reason ? <AgentText text={reason} /> : <p className="muted">{running ? 'Thinking…' : 'Stopped before any reasoning.'}</p>}
        </section>
      )}
      {(tools.length > 0 || step.question) && (
        <section className="phase phase-act" aria-label={`Act, ${label.toLowerCase()}`}>
          <h4 title={PHASE_HINTS.act}>Act</h4>
          {tools.map((tool) => (
            <ToolCallCard key={tool.id} tool={tool} />
          ))}
          {step.question && (
            <div className={`question-record question-${step.question.status}`}>
              {step.question.status === 'pending' ? (
                // The banner above the message box shows the question; saying it twice costs a phone half its screen.
                <span className="muted">Asked you a question: waiting for your answer below.</span>
              ) : (
                <>
                  <span className="muted">Asked you:</span> {step.question.text} <span className="muted">({QUESTION_STATUS[step.question.status]})</span>
                </>
              )}
              {step.question.answer && (
                <div>
                  <span className="muted">You answered:</span> {step.question.answer}
                </div>
              )}
            </div>
          )}
        </section>
      )}
      {fallbackLines(step.fallbacks).map((line) => (
        <p key={line.key} className="step-fallback" title={line.reason}>
          Answered by the fallback model <strong>{line.model}</strong> ({line.phases}; {line.fromModel} failed: {line.reason})
        </p>
      ))}
      {(observe || step.observeDone) && (
        <section className="phase phase-observe" aria-label={`Observe, ${label.toLowerCase()}`}>
          <h4 title={PHASE_HINTS.observe}>Observe</h4>
          <AgentText text={observe} />
        </section>
      )}
      {onRewind && step.observeDone && (
        <div className="step-rewind">
          <ConfirmButton
            label="Rewind to here"
            question={`Roll the conversation back to the end of step ${step.step}? Later steps are folded.`}
            confirm="Rewind"
            onConfirm={onRewind}
            title="Roll the conversation back to the end of this step and go on from here; later steps are folded"
          />
        </div>
      )}
    </details>
  );
}

/** A step's fallbacks, one line per fallback model and failure, naming the phases it answered ("reason, observe"). */
function fallbackLines(fallbacks: FallbackView[] | undefined): Array<{ key: string; model: string; fromModel: string; reason: string; phases: string }> {
  const lines = new Map<string, { key: string; model: string; fromModel: string; reason: string; phases: string[] }>();
  for (const fallback of fallbacks ?? []) {
    const key = `${fallback.model}\n${fallback.fromModel}\n${fallback.reason}`;
    const line = lines.get(key) ?? { key, model: fallback.model, fromModel: fallback.fromModel, reason: fallback.reason, phases: [] };
    const phase = fallback.purpose.slice(fallback.purpose.lastIndexOf('.') + 1);
    if (!line.phases.includes(phase)) line.phases.push(phase);
    lines.set(key, line);
  }
  return [...lines.values()].map((line) => ({ ...line, phases: line.phases.join(', ') }));
}
