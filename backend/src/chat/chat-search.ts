import type { SearchResults } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { User } from '../auth/user.ts';
import { HIGHLIGHT_END, HIGHLIGHT_START, type SearchHit, type Store, searchTerms } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { HistoryError } from './history-service.ts';

/** Search across a person's chats: their titles, user messages and answers. */
@injectable()
export class ChatSearch {
  constructor(@inject(TOKENS.Store) private readonly store: Store) {}

  /**
   * The viewer's chats that hold every word of `text`, best match first; with `everyone`, an
   * admin's search of everyone's chats (each hit naming its owner). Anyone else gets their own.
   */
  async search(viewer: User, text: string, options: { limit: number; everyone: boolean }): Promise<SearchResults> {
    const terms = searchTerms(text);
    if (terms.length === 0) throw new HistoryError(400, 'invalid_query', 'q must hold a word (letters or digits) to search for');
    const all = options.everyone && viewer.admin;
    const hits = await this.store.searchSessions({ terms, owner: all ? undefined : viewer.id, limit: options.limit });
    return { terms, hits: hits.map((hit) => toWire(hit, all)) };
  }
}

function toWire(hit: SearchHit, withOwner: boolean): SearchResults['hits'][number] {
  const { snippet, highlights } = readMarks(hit.snippet);
  return {
    session_id: hit.sessionId,
    title: hit.title,
    last_activity_at: hit.updatedAt,
    match: hit.message ? 'message' : 'title',
    ...(hit.message ? { role: hit.message.role, after_seq: hit.message.afterSeq } : {}),
    snippet,
    highlights,
    ...(withOwner ? { owner: { id: hit.owner, name: hit.ownerName } } : {}),
  };
}

/** A snippet without its marks, and where the marked words were. */
export function readMarks(marked: string): { snippet: string; highlights: [number, number][] } {
  let snippet = '';
  const highlights: [number, number][] = [];
  let start: number | undefined;
  for (const char of marked) {
    if (char === HIGHLIGHT_START) start = snippet.length;
    else if (char === HIGHLIGHT_END) {
      if (start !== undefined && snippet.length > start) highlights.push([start, snippet.length]);
      start = undefined;
    } else snippet += char;
  }
  return { snippet, highlights };
}
