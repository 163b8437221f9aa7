import { useEffect, useRef, useState } from 'react';

/**
 * A snippet to paste somewhere else, with a Copy button. Where the clipboard is out of reach (a
 * page served over plain http from another machine), the button selects the text instead.
 */
export function CopyableSnippet({ label, text }: { label: string; text: string }) {
  const preRef = useRef<HTMLPreElement>(null);
  const [status, setStatus] = useState('');

  useEffect(() => {
    if (!status) return;
    const timer = setTimeout(() => setStatus(''), 4000);
    return () => clearTimeout(timer);
  }, [status]);

  const selectText = () => {
    const pre = preRef.current;
    const selection = window.getSelection();
    if (!pre || !selection) return false;
    selection.selectAllChildren(pre);
    return true;
  };

  const copy = async () => {
    try {
      if (!navigator.clipboard) throw new Error('No clipboard');
      await navigator.clipboard.writeText(text);
      setStatus('Copied');
    } catch {
      setStatus(selectText() ? 'Selected: press Ctrl+C (⌘C) to copy' : 'Select the text to copy it');
    }
  };

  return (
    <div className="snippet">
      <pre ref={preRef} className="snippet-text" tabIndex={0} aria-label={label}>
        <code>{text}</code>
      </pre>
      <div className="snippet-actions">
        <button type="button" className="snippet-copy" aria-label={`Copy ${label}`} onClick={() => void copy()}>
          Copy
        </button>
        <span className="snippet-status" role="status">
          {status}
        </span>
      </div>
    </div>
  );
}
