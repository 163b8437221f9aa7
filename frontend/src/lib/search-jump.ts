import type { SearchHit } from '@stepwise/shared-types';

/** The page of a search hit: the chat, and (for a message) what to find in it once it is shown. */
export function chatLinkAt(hit: SearchHit, terms: string[]): string {
  const params = new URLSearchParams({ session: hit.session_id });
  if (hit.match === 'message') {
    params.set('find', terms.join(' '));
    if (hit.role) params.set('role', hit.role);
  }
  return `/?${params}`;
}

/** The turns of the conversation a hit may be, by role. */
const TURNS = { user: '[data-testid="user-turn"]', assistant: '[data-testid="assistant-turn"]' } as const;
/** How long the conversation must stay still (its log replayed) before the page settles on the match. */
const SETTLED_MS = 400;
/** How long the page looks for the match at all. */
const GIVE_UP_MS = 15_000;

/**
 * Opened from a search hit (`?find=…&role=…`): once the chat's log has been replayed, scrolls to the
 * first turn of that role holding a word that starts with one of the terms, outlines it, and marks
 * the words (CSS highlights, so React's DOM is left alone). Returns a function that stops looking.
 */
export function jumpToSearchMatch(): () => void {
  const params = new URLSearchParams(window.location.search);
  const terms = (params.get('find') ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  if (terms.length === 0) return () => undefined;
  const role = params.get('role') === 'user' ? 'user' : params.get('role') === 'assistant' ? 'assistant' : undefined;
  const selector = role ? TURNS[role] : `${TURNS.user}, ${TURNS.assistant}`;
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${terms.map((term) => term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})[\\p{L}\\p{N}]*`, 'giu');
  let quiet: ReturnType<typeof setTimeout> | undefined;
  const settle = () => {
    const turn = [...document.querySelectorAll<HTMLElement>(selector)].find((element) => {
      pattern.lastIndex = 0;
      return pattern.test(element.textContent ?? '');
    });
    if (!turn) return;
    stop();
    for (const element of document.querySelectorAll('.search-found')) element.classList.remove('search-found');
    turn.classList.add('search-found');
    turn.scrollIntoView({ block: 'center' });
    markWords(turn, pattern);
  };
  const observer = new MutationObserver(() => {
    clearTimeout(quiet);
    quiet = setTimeout(settle, SETTLED_MS);
  });
  observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  quiet = setTimeout(settle, SETTLED_MS);
  const giveUp = setTimeout(() => stop(), GIVE_UP_MS);
  function stop() {
    observer.disconnect();
    clearTimeout(quiet);
    clearTimeout(giveUp);
  }
  return stop;
}

/** Marks the matched words inside `element` with the `search-match` CSS highlight, where the browser has them. */
function markWords(element: HTMLElement, pattern: RegExp): void {
  const registry = (globalThis.CSS as { highlights?: Map<string, unknown> } | undefined)?.highlights;
  const HighlightClass = (globalThis as { Highlight?: new (...ranges: Range[]) => unknown }).Highlight;
  if (!registry || !HighlightClass) return;
  const ranges: Range[] = [];
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent ?? '';
    pattern.lastIndex = 0;
    for (const match of text.matchAll(pattern)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      ranges.push(range);
    }
  }
  registry.set('search-match', new HighlightClass(...ranges));
}
