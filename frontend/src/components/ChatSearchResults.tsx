import type { SearchHit, SearchResults } from '@stepwise/shared-types';
import { useEffect, useState } from 'react';
import { api } from '../lib/api.ts';
import { chatLinkAt } from '../lib/search-jump.ts';

/** How long the box waits for typing to pause before it asks the server. */
const TYPING_PAUSE_MS = 250;

/** The sidebar's search box: what it holds, and its results in place of the list of chats while it holds words. */
export function ChatSearchBox({ query, onChange }: { query: string; onChange: (query: string) => void }) {
  return (
    <div className="chat-search">
      <input
        type="search"
        aria-label="Search chats"
        placeholder="Search chats"
        value={query}
        maxLength={500}
        onChange={(event) => onChange(event.target.value)}
        onKeyDown={(event) => {
          if (event.key === 'Escape' && query) {
            event.preventDefault();
            onChange('');
          }
        }}
      />
    </div>
  );
}

/** The hits of a search: each chat's title and the matched text, the matched words marked; a hit opens the chat at it. */
export function ChatSearchResults({ query, scope, userId }: { query: string; scope: 'own' | 'all'; userId: string | undefined }) {
  const [results, setResults] = useState<SearchResults | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    const controller = new AbortController();
    const timer = setTimeout(() => {
      api.search(query, scope, controller.signal).then(
        (found) => {
          setResults(found);
          setError(undefined);
        },
        (failure: Error) => {
          if (!controller.signal.aborted) setError(failure.message);
        },
      );
    }, TYPING_PAUSE_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [query, scope]);
  if (error) return <p className="sidebar-error">{error}</p>;
  if (!results) return <p className="muted search-status">Searching…</p>;
  if (results.hits.length === 0) return <p className="muted search-status">No chat holds “{query.trim()}”.</p>;
  return (
    <ul className="session-list search-results" aria-label="Search results">
      {byChat(results.hits).map(({ chat, titleHit, messageHits }) => (
        <li key={chat.session_id} className="search-chat">
          <a href={chatLinkAt(messageHits[0] ?? chat, results.terms)}>
            <span className="session-title">{titleHit ? <Marked text={titleHit.snippet} highlights={titleHit.highlights} /> : (chat.title ?? 'New chat')}</span>
            {chat.owner && chat.owner.id !== userId && <span className="session-owner">{chat.owner.name ?? (chat.owner.id || 'Before sign-in')}</span>}
          </a>
          {messageHits.slice(0, SNIPPETS_PER_CHAT).map((hit) => (
            <a key={`${hit.role}:${hit.after_seq}:${hit.snippet}`} className="search-snippet" href={chatLinkAt(hit, results.terms)}>
              <span className="search-role">{hit.role === 'user' ? 'You' : 'Answer'}: </span>
              <Marked text={hit.snippet} highlights={hit.highlights} />
            </a>
          ))}
          {messageHits.length > SNIPPETS_PER_CHAT && <span className="muted search-more">More matches in this chat</span>}
        </li>
      ))}
    </ul>
  );
}

/** Matched messages shown under a chat's title; the rest are counted. */
const SNIPPETS_PER_CHAT = 3;

/** The hits by chat, in the order of each chat's best hit. */
function byChat(hits: SearchHit[]): { chat: SearchHit; titleHit: SearchHit | undefined; messageHits: SearchHit[] }[] {
  const chats = new Map<string, { chat: SearchHit; titleHit: SearchHit | undefined; messageHits: SearchHit[] }>();
  for (const hit of hits) {
    const entry = chats.get(hit.session_id) ?? { chat: hit, titleHit: undefined, messageHits: [] };
    if (hit.match === 'title') entry.titleHit = hit;
    else entry.messageHits.push(hit);
    chats.set(hit.session_id, entry);
  }
  return [...chats.values()];
}

/** Text with its highlighted ranges in <mark>. */
function Marked({ text, highlights }: Pick<SearchHit, 'highlights'> & { text: string }) {
  const parts: React.ReactNode[] = [];
  let at = 0;
  for (const [start, end] of highlights) {
    if (start < at) continue;
    if (start > at) parts.push(text.slice(at, start));
    parts.push(<mark key={start}>{text.slice(start, end)}</mark>);
    at = end;
  }
  parts.push(text.slice(at));
  return <>{parts}</>;
}
