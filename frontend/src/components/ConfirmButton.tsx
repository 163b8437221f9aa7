import { type ReactNode, useState } from 'react';

/**
 * A button whose action changes what the conversation is (a rewind, a rollback): the first press
 * asks, in words, and only the second (the confirm button) acts; Cancel puts it back.
 */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
  disabled,
  title,
}: {
  label: ReactNode;
  question: string;
  confirm: string;
  onConfirm: () => void;
  disabled?: boolean;
  title?: string;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" className="ghost" disabled={disabled} onClick={() => setAsking(true)} {...(title ? { title } : {})}>
        {label}
      </button>
    );
  return (
    <span className="confirm-ask" role="group" aria-label={question}>
      <span>{question}</span>{' '}
      <button
        type="button"
        disabled={disabled}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirm}
      </button>{' '}
      <button type="button" className="ghost" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
