import { type FormEvent, useEffect, useId, useRef, useState } from 'react';

const FLASH_TITLE = '❓ The agent asks you';

/** The agent's question: flashes softly, takes focus, and flashes the tab title while the tab is hidden. */
export function QuestionBanner({ question, onAnswer }: { question: string; onAnswer: (answer: string) => boolean }) {
  const [answer, setAnswer] = useState('');
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const questionId = useId();

  useEffect(() => {
    inputRef.current?.focus();
  }, [question]);

  useEffect(() => flashTitleWhileHidden(), [question]);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const text = answer.trim();
    if (text && onAnswer(text)) setAnswer('');
  };

  return (
    <div className="question-banner" role="alertdialog" aria-labelledby={questionId} aria-modal="false">
      <p className="question-label">The agent asks:</p>
      <p id={questionId} className="question-text">
        {question}
      </p>
      <form onSubmit={submit} className="question-form">
        <textarea
          ref={inputRef}
          aria-label="Your answer"
          value={answer}
          rows={2}
          onChange={(event) => setAnswer(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) submit(event);
          }}
        />
        <button type="submit" className="primary" disabled={!answer.trim()}>
          Answer
        </button>
      </form>
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
