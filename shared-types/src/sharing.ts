import { z } from 'zod';
import { HistoryMessage, RunSummary, SessionSummary } from './rest.ts';
import { LoggedEvent } from './server-events.ts';

/** One match of `GET /api/search?q=`: a chat's title, or a user message or answer of it. */
export const SearchHit = z.object({
  session_id: z.string(),
  title: z.string().nullable(),
  last_activity_at: z.string(),
  /** What matched: the chat's title, or one of its messages (`role`, and `after_seq`, which places it in the log). */
  match: z.enum(['title', 'message']),
  role: z.enum(['user', 'assistant']).optional(),
  after_seq: z.number().int().optional(),
  /** The matched text, or the part of it around the match (`…` where it was cut). */
  snippet: z.string(),
  /** The matched words in `snippet`, as [start, end) offsets (UTF-16 code units, as JavaScript counts). */
  highlights: z.array(z.tuple([z.number().int(), z.number().int()])),
  /** Whose chat it is: in an admin's search of everyone's chats (`scope=all`). */
  owner: z.object({ id: z.string(), name: z.string().nullable() }).optional(),
});
export type SearchHit = z.infer<typeof SearchHit>;

/** `GET /api/search?q=…`: best match first. `terms` are the words searched for, as the server read `q`. */
export const SearchResults = z.object({ terms: z.array(z.string()), hits: z.array(SearchHit) });
export type SearchResults = z.infer<typeof SearchResults>;

/**
 * `GET /api/sessions/:id/export?format=json`: a chat whole, as of `exported_at`: its summary, the
 * messages people read (as the history API gives them), its runs, and its event log (every event,
 * as `GET /api/sessions/:id/events` gives them).
 */
export const ChatExport = z.object({
  format: z.literal('stepwise.chat'),
  version: z.literal(1),
  exported_at: z.string(),
  session: SessionSummary,
  messages: z.array(HistoryMessage),
  runs: z.array(RunSummary),
  events: z.array(LoggedEvent),
});
export type ChatExport = z.infer<typeof ChatExport>;
