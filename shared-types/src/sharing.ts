import { z } from 'zod';
import { HistoryMessage, RunSummary, SessionSummary } from './rest.ts';
import { LoggedEvent, SessionFile } from './server-events.ts';

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

/** A read-only link to a chat, as its owner sees it. `token` and `url` are given once, when it is made. */
export const ShareInfo = z.object({
  id: z.string(),
  created_at: z.string(),
  /** When the link stops working; null: until it is revoked. */
  expires_at: z.string().nullable(),
  /** Whether the link shows the chat's files. */
  include_files: z.boolean(),
  /** The chat's last seq when the link was made: the link shows the chat as it stood then. */
  at_seq: z.number().int(),
  token: z.string().optional(),
  /** The web app's page for the link, relative to the server (`/?shared=TOKEN`). */
  url: z.string().optional(),
});
export type ShareInfo = z.infer<typeof ShareInfo>;

/** `POST /api/sessions/:id/shares`: what a new link is made with. */
export const CreateShare = z
  .object({
    /** Hours until the link stops working (up to a year); left out: until it is revoked. */
    expires_in_hours: z
      .number()
      .positive('expires_in_hours must be positive')
      .max(24 * 366, 'expires_in_hours must be at most a year')
      .optional(),
    /** Whether the link shows the chat's files (default: no). */
    include_files: z.boolean().default(false),
  })
  .strict();
export type CreateShare = z.infer<typeof CreateShare>;

/** `GET /api/sessions/:id/shares`: a chat's links, oldest first. */
export const ShareList = z.object({ shares: z.array(ShareInfo) });
export type ShareList = z.infer<typeof ShareList>;

/** `GET /api/shared/:token`: the chat as it stood when the link was made, for anyone with the link. */
export const SharedChat = z.object({
  chat: ChatExport,
  shared_at: z.string(),
  expires_at: z.string().nullable(),
  /** The chat's files, when the link shows them (`GET /api/shared/:token/files/:name` downloads one). */
  files: z.array(SessionFile).optional(),
});
export type SharedChat = z.infer<typeof SharedChat>;

/** `POST /api/shared/:token/copy`: the signed-in person's new chat, a copy of the shared one to go on with. */
export const ChatCopy = z.object({ session_id: z.string() });
export type ChatCopy = z.infer<typeof ChatCopy>;
