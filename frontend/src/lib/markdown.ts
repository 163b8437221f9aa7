import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/**
 * Links may go to http(s) and mail addresses, to anchors, and to paths of this site. A path must
 * not start with a second slash or backslash: `//evil.example` and `/\evil.example` go to another
 * host. Browsers drop tabs and newlines inside URLs, so any control character or space refuses it.
 */
export function isSafeHref(href: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused here
  if (/[\u0000-\u0020\u007f]/.test(href)) return false;
  return /^(https?:|mailto:)/i.test(href) || href.startsWith('#') || /^\/(?![/\\])/.test(href);
}

/**
 * Markdown for model output. Raw HTML in the text is shown as text, never parsed; links keep
 * only safe schemes; and DOMPurify checks the result once more before it reaches the DOM.
 */
const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    link({ href, title, tokens }) {
      const label = this.parser.parseInline(tokens);
      if (!isSafeHref(href)) return label;
      const titleAttribute = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href)}"${titleAttribute} target="_blank" rel="noopener noreferrer">${label}</a>`;
    },
    image: ({ text }) => escapeHtml(text),
    // Every code block gets a Copy button (Markdown.tsx handles its clicks).
    code({ text, lang }) {
      const language = lang ? ` class="language-${escapeHtml(lang.split(/\s/)[0]!)}"` : '';
      return `<div class="code-block"><button type="button" class="code-copy" aria-label="Copy code">Copy</button><pre><code${language}>${escapeHtml(text)}</code></pre></div>`;
    },
  },
});

/**
 * Arithmetic kept as written: a `*` between operands ("12*7", "(2+3)*4") is a multiplication,
 * never emphasis, so it is escaped outside code (where Markdown shows it as it is).
 */
export function keepArithmetic(text: string): string {
  return text
    .split(/(```[\s\S]*?(?:```|$)|`[^`\n]*`)/)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(/(?<=[\d)]\s*)\*(?=\s*[\d(])/g, '\\*')))
    .join('');
}

/** Renders model Markdown to sanitized HTML. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(keepArithmetic(text)) as string;
  return DOMPurify.sanitize(html, { ADD_ATTR: ['target'], FORBID_TAGS: ['style', 'img', 'form', 'input'] });
}
