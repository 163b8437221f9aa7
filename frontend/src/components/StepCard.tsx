import { useEffect, useState } from 'react';
import type { StepView } from '../state/view-state.ts';
import { Markdown } from './Markdown.tsx';
import { ToolCallCard } from './ToolCallCard.tsx';

const QUESTION_STATUS = {
  pending: 'waiting for your answer',
  answered: 'answered',
  timed_out: 'no answer in time',
  stopped: 'not answered',
} as const;

/** One reason → act → observe step; foldable once finished. */
export function StepCard({ step, maxSteps, current, folded }: { step: StepView; maxSteps: number; current: boolean; folded: boolean }) {
  const tools = step.tools.filter((tool) => tool.name !== 'request_input');
  // Runs rebuilt from the log start folded; live ones stay open until the user folds them.
  const [open, setOpen] = useState(!folded);
  useEffect(() => {
    if (folded) setOpen(false);
  }, [folded]);
  return (
    <details
      className={`step-card ${current ? 'step-current' : ''}`}
      open={open}
      onToggle={(event) => setOpen(event.currentTarget.open)}
      data-testid="step-card"
    >
      <summary>
        <span className="step-badge">
          Step {step.step} of {maxSteps || '?'}
        </span>
        {current && !step.observeDone && <span className="spinner small" aria-label="in progress" />}
      </summary>
      <section className="phase phase-reason" aria-label={`Reason, step ${step.step}`}>
        <h4>Reason</h4>
        {step.reason ? <Markdown text={step.reason} /> : <p className="muted">Thinking…</p>}
      </section>
      {(tools.length > 0 || step.question) && (
        <section className="phase phase-act" aria-label={`Act, step ${step.step}`}>
          <h4>Act</h4>
          {tools.map((tool) => (
            <ToolCallCard key={tool.id} tool={tool} />
          ))}
          {step.question && (
            <div className={`question-record question-${step.question.status}`}>
              <span className="muted">Asked you:</span> {step.question.text}{' '}
              <span className="muted">({QUESTION_STATUS[step.question.status]})</span>
              {step.question.answer && (
                <div>
                  <span className="muted">You answered:</span> {step.question.answer}
                </div>
              )}
            </div>
          )}
        </section>
      )}
      {(step.observe || step.observeDone) && (
        <section className="phase phase-observe" aria-label={`Observe, step ${step.step}`}>
          <h4>Observe</h4>
          <Markdown text={step.observe} />
        </section>
      )}
    </details>
  );
}
