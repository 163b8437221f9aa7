import { useEffect, useState } from 'react';
import { copyText } from '../lib/clipboard.ts';

/** A small Copy button for an answer: "Copied" for a moment, or says to select the text when the clipboard is out of reach. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [status, setStatus] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (status === 'idle') return;
    const timer = setTimeout(() => setStatus('idle'), 2500);
    return () => clearTimeout(timer);
  }, [status]);
  return (
    <button
      type="button"
      className="copy-button"
      aria-label={label}
      title={status === 'failed' ? 'The clipboard is not available here: select the text to copy it' : label}
      onClick={() => void copyText(text).then((copied) => setStatus(copied ? 'copied' : 'failed'))}
    >
      {status === 'copied' ? 'Copied' : status === 'failed' ? 'Select to copy' : 'Copy'}
    </button>
  );
}
