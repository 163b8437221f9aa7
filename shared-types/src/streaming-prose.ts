/**
 * Reason and observe replies end in a JSON control block (`{"plan": …, "finish": …}`, often in a
 * ```json fence) that the server strips from the finished text. While text streams (and after a
 * stop cut it short) the block is cut off here: from the first place where one may begin, only the
 * prose before it is shown. The server streams its previews through this too, so no client sees
 * the block; a client that shows raw model text may use it the same way.
 */
export function streamingProse(text: string): string {
  let prose = '';
  let index = 0;
  while (index < text.length) {
    const candidate = nextCandidate(text, index);
    if (!candidate) {
      prose += text.slice(index);
      break;
    }
    prose += text.slice(index, candidate.start);
    const end = candidate.kind === 'fence' ? fenceEnd(text, candidate.start) : braceEnd(text, candidate.start);
    // Unfinished: this may still become the control block, so nothing from here on is shown.
    if (end.kind === 'open') return tidy(prose);
    if (end.kind === 'text') prose += text.slice(candidate.start, end.index);
    index = end.index;
  }
  return tidy(prose);
}

/** Where a control block may begin: a fence or a brace. */
export type Candidate = { kind: 'fence' | 'brace'; start: number };
/** How a candidate ends: not yet, as JSON (machinery, not shown), or as text (shown). */
export type End = { kind: 'open' } | { kind: 'json'; index: number } | { kind: 'text'; index: number };

/**
 * The next place from `from` on where a control block may begin: a code fence (or the first
 * backticks of one) at a line start or a ```json anywhere; a `{` at a line start; a `{` elsewhere
 * that opens a JSON object (a quote follows) or that ends the text so far. The search starts at
 * `searchStart` (at most `from`: the line break before `from`, where a line start is to be seen).
 */
export function nextCandidate(text: string, from: number, searchStart = from): Candidate | undefined {
  const pattern = /(^|\n)[ \t]*(`{1,3})|```json|(^|\n)[ \t]*(\{)|\{(?=\s*(?:"|$))/g;
  pattern.lastIndex = searchStart;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const found = match[0];
    if (match[2] !== undefined) {
      const start = match.index + found.length - match[2].length;
      if (start < from) continue;
      // One or two backticks at a line start count only at the very end, where a fence may be arriving.
      if (match[2].length === 3 || start + match[2].length === text.length) return { kind: 'fence', start };
      continue;
    }
    if (found === '```json') return { kind: 'fence', start: match.index };
    const start = match.index + found.length - 1;
    if (start >= from) return { kind: 'brace', start };
  }
  return undefined;
}

/** Where the fence opening at `start` ends: a fenced JSON object is machinery, other code is text. */
function fenceEnd(text: string, start: number): End {
  const lineEnd = text.indexOf('\n', start);
  if (lineEnd < 0) return { kind: 'open' };
  const closing = /(^|\n)[ \t]*```[ \t]*(?=\n|$)/g;
  closing.lastIndex = lineEnd;
  const close = closing.exec(text);
  if (!close) return { kind: 'open' };
  const index = close.index + close[0].length;
  const body = text.slice(lineEnd + 1, close.index + close[1]!.length).trim();
  return body.startsWith('{') ? { kind: 'json', index } : { kind: 'text', index };
}

/** Where the object opening at `start` ends: a complete JSON object is machinery, anything else is text. */
function braceEnd(text: string, start: number): End {
  const end = matchBrace(text, start);
  if (end < 0) return { kind: 'open' };
  return isJsonObject(text.slice(start, end)) ? { kind: 'json', index: end } : { kind: 'text', index: end };
}

/** Index just past the brace that closes the one at `start`, or -1; braces inside strings do not count. */
export function matchBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return index + 1;
  }
  return -1;
}

/** Whether the text is one JSON object. */
export function isJsonObject(candidate: string): boolean {
  try {
    const value: unknown = JSON.parse(candidate);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** Whitespace before line ends dropped, blank lines at most one, no whitespace at either end. */
export function tidy(prose: string): string {
  return prose
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
