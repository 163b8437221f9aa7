import { useEffect, useId } from 'react';
import { formatClock, formatFull } from '../lib/time.ts';

const FLASH_TITLE = '❓ The agent asks you';

/**
 * The agent's question, above the message box that takes the answer: it flashes softly, and
 * flashes the tab title while the tab is hidden.
 */
export function QuestionBanner({
  question,
  deadline,
  now,
  choices,
  onChoose,
  parked,
}: {
  /** The run is parked on this question: past its deadline, it waits (holding nothing) for the answer. */
  parked?: boolean;
  question: string;
  deadline: string | undefined;
  now: Date;
  /** Answers offered as buttons (a confirmation's Yes / No); typing an answer still works. */
  choices?: string[];
  onChoose?: (choice: string) => void;
}) {
  const questionId = useId();
  const hintId = useId();

  // biome-ignore lint/correctness/useExhaustiveDependencies: each new question flashes the title again
  useEffect(() => flashTitleWhileHidden(), [question]);

  return (
    <div className="question-banner" role="alertdialog" aria-labelledby={questionId} aria-describedby={hintId} aria-modal="false">
      <p className="question-label">
        {parked ? 'Waiting for you' : 'The agent asks you'}{' '}
        <span id={hintId} className="question-hint">
          · answer below
          {parked && ' to go on: nobody answered in time, so the run is parked until you do'}
          {deadline && !parked && (
            <>
              {' '}
              by{' '}
              <time dateTime={deadline} title={formatFull(deadline)}>
                {formatClock(deadline, now)}
              </time>
            </>
          )}
        </span>
      </p>
      <p id={questionId} className="question-text">
        {question}
      </p>
      {choices && onChoose && (
        <div className="question-choices" data-testid="question-choices">
          {choices.map((choice) => (
            <button key={choice} type="button" className={choice === 'No' ? 'ghost' : undefined} onClick={() => onChoose(choice)}>
              {choice}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

/** Alternates the tab title while the page is hidden; returns the cleanup. */
function flashTitleWhileHidden(): () => void {
  const original = document.title;
  let timer: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
    document.title = original;
  };
  const start = () => {
    if (timer) return;
    let on = false;
    timer = setInterval(() => {
      on = !on;
      document.title = on ? FLASH_TITLE : original;
    }, 1000);
  };
  const onVisibility = () => (document.hidden ? start() : stop());
  onVisibility();
  document.addEventListener('visibilitychange', onVisibility);
  return () => {
    document.removeEventListener('visibilitychange', onVisibility);
    stop();
  };
}
