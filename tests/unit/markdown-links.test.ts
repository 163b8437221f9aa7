import { describe, expect, it } from 'vitest';
import { isSafeHref, keepArithmetic } from '../../frontend/src/lib/markdown.ts';

describe('links in model Markdown', () => {
  it.each(['https://example.com/a', 'http://example.com', 'mailto:me@example.com', '#section', '/api/health', '/docs/page?x=1'])('keeps %s', (href) =>
    expect(isSafeHref(href)).toBe(true),
  );

  it.each([
    ['a protocol-relative link', '//evil.example'],
    ['a protocol-relative link with a path', '//evil.example/login'],
    ['a backslash that browsers read as a slash', '/\\evil.example'],
    ['a tab that browsers drop', '/\t/evil.example'],
    ['a newline that browsers drop', '/\n/evil.example'],
    ['a leading space', ' //evil.example'],
    ['javascript:', 'javascript:alert(1)'],
    ['a javascript: scheme split by a tab', 'java\tscript:alert(1)'],
    ['data:', 'data:text/html,<script>alert(1)</script>'],
    ['a relative path that is not under this site', 'evil.example'],
  ])('refuses %s', (_name, href) => expect(isSafeHref(href)).toBe(false));
});

describe('arithmetic in Markdown', () => {
  it('escapes a multiplication so it never reads as emphasis; code and real emphasis are untouched', () => {
    expect(keepArithmetic('Compute 12*7, then 3 * (2+5)*2')).toBe('Compute 12\\*7, then 3 \\* (2+5)\\*2');
    expect(keepArithmetic('`12*7` and **29**, *a note*')).toBe('`12*7` and **29**, *a note*');
    expect(keepArithmetic('```\n2*3\n```')).toBe('```\n2*3\n```');
  });
});
