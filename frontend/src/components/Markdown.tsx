import { useMemo } from 'react';
import { renderMarkdown } from '../lib/markdown.ts';

/** Model text as Markdown; raw HTML in it shows as text. */
export function Markdown({ text, className }: { text: string; className?: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div className={`markdown ${className ?? ''}`} dangerouslySetInnerHTML={{ __html: html }} />;
}
