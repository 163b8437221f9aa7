import { type MouseEvent, useMemo } from 'react';
import { copyText } from '../lib/clipboard.ts';
import { renderMarkdown } from '../lib/markdown.ts';

/** Model text as Markdown; raw HTML in it shows as text; each code block has a Copy button. */
export function Markdown({ text, className }: { text: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  const onClick = (event: MouseEvent<HTMLDivElement>) => {
    const button = (event.target as HTMLElement).closest('button.code-copy');
    const code = button?.parentElement?.querySelector('pre')?.textContent;
    if (!button || code == null) return;
    void copyText(code).then((copied) => {
      button.textContent = copied ? 'Copied' : 'Select to copy';
      setTimeout(() => (button.textContent = 'Copy'), 2500);
    });
  };
  // The clicks handled are those of the code blocks' own buttons (keyboard users press them as buttons).
  return <div className={`markdown ${className ?? ''}`} onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}
