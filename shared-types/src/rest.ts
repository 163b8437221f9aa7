import { z } from 'zod';
import { LoggedEvent } from './server-events.ts';

/** One session in the history list. */
export const SessionSummary = z.object({
  id: z.string(),
  title: z.string().nullable(),
  created_at: z.string(),
  last_activity_at: z.string(),
  /** Whose chat it is: in an admin's list of everyone's chats (`?scope=all`). */
  owner: z.object({ id: z.string(), name: z.string().nullable() }).optional(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;

/** `GET /api/sessions`: newest activity first. */
export const SessionList = z.object({ sessions: z.array(SessionSummary) });
export type SessionList = z.infer<typeof SessionList>;

/** A message of a session as people read it; `after_seq` places it among the logged events. */
export const HistoryMessage = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  after_seq: z.number().int(),
});
export type HistoryMessage = z.infer<typeof HistoryMessage>;

export const RunSummary = z.object({
  id: z.string(),
  strategy: z.string(),
  max_steps: z.number().int(),
  /** `parked`: waiting for a person's answer past its question's deadline (it holds nothing meanwhile). */
  status: z.enum(['running', 'parked', 'completed', 'stopped', 'failed']),
  end_reason: z.string().nullable(),
  steps: z.number().int().nullable(),
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  /** Of the prompt tokens, those served from the endpoint's cache (runs ended since it was recorded). */
  cached_tokens: z.number().int().optional(),
  /** Of the completion tokens, those spent reasoning. */
  reasoning_tokens: z.number().int().optional(),
  /** The run's cost in USD by the price table; null when a call's model had no known price. */
  cost_usd: z.number().nullable().optional(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
});
export type RunSummary = z.infer<typeof RunSummary>;

/** `GET /api/sessions/:id`. */
export const SessionDetail = z.object({
  session: SessionSummary,
  messages: z.array(HistoryMessage),
  runs: z.array(RunSummary),
  last_seq: z.number().int(),
});
export type SessionDetail = z.infer<typeof SessionDetail>;

/**
 * `GET /api/sessions/:id/events?after_seq=N&limit=M`: one page of the log (`limit` 1 to 10000,
 * default 1000; about 4 MiB of events at most, always at least one). `last_seq` is where the next page starts; `has_more` says whether there is one.
 */
export const SessionEvents = z.object({ events: z.array(LoggedEvent), last_seq: z.number().int(), has_more: z.boolean() });
export type SessionEvents = z.infer<typeof SessionEvents>;

/** Every REST error body. */
export const ApiError = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    /** A body that failed its checks (`invalid_settings`): every problem, each with where it is. */
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});
export type ApiError = z.infer<typeof ApiError>;

/** A snapshot or a restore point, as `GET /api/sessions/:id/snapshots` lists it. */
export const SnapshotInfo = z.object({
  snapshot_id: z.string(),
  label: z.string(),
  kind: z.enum(['manual', 'rollback', 'step']),
  run_id: z.string().nullable(),
  step: z.number().int().nullable(),
  at_seq: z.number().int(),
  created_at: z.string(),
});
export type SnapshotInfo = z.infer<typeof SnapshotInfo>;

/** `GET /api/sessions/:id/snapshots`: manual snapshots, rollbacks and every step's end, oldest first. */
export const SnapshotList = z.object({ snapshots: z.array(SnapshotInfo) });
export type SnapshotList = z.infer<typeof SnapshotList>;

/** A signed-in person, as `GET /api/me` describes them. */
export const AuthUser = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string().optional(),
  /** Admins may list and read every chat and stop its run. */
  admin: z.boolean(),
});
export type AuthUser = z.infer<typeof AuthUser>;

/** `GET /api/me`: who the server takes this client for, and how people sign in. */
export const Me = z.object({
  auth_mode: z.enum(['none', 'token', 'oidc', 'header']),
  user: AuthUser,
  /** Where to sign out (oidc), when signing out is a thing here. */
  logout_url: z.string().optional(),
  /** Whether this user may change the settings in the app (`GET` / `PATCH /api/settings`). */
  settings_admin: z.boolean().optional(),
});
export type Me = z.infer<typeof Me>;
