import {
  type ApiError,
  Me,
  type SessionDetail,
  SessionDetail as SessionDetailSchema,
  type SessionSummary,
  SessionList,
  type SnapshotInfo,
  SnapshotList,
  SearchResults,
  ChatCopy,
  type CreateShare,
  SharedChat,
  ShareInfo,
  ShareList,
  SettingsView,
} from '@stepwise/shared-types';

import { AuthRequiredError, authHeaders, SignInRequiredError } from './auth.ts';
import { withHumanSizes } from './sizes.ts';

async function call(path: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(path, { ...init, headers: { ...authHeaders(), ...init.headers } });
  if (response.status === 401) throw new AuthRequiredError();
  return response;
}

/** The history API, from the page's own origin. */
export const api = {
  /**
   * Who the server takes this browser for; rejects with AuthRequiredError (the token is missing or
   * wrong) or SignInRequiredError (AUTH_MODE oidc: nobody is signed in).
   */
  async me(): Promise<Me> {
    const response = await fetch('/api/me', { headers: authHeaders() });
    if (response.status === 401) {
      const body = (await response.json().catch(() => ({}))) as { auth_mode?: string; login_url?: string };
      if (body.auth_mode === 'oidc') throw new SignInRequiredError(body.login_url ?? '/auth/login');
      if (body.auth_mode === 'header') throw new SignInRequiredError(undefined);
      throw new AuthRequiredError();
    }
    if (!response.ok) throw new Error(`Could not reach the server (${response.status})`);
    return Me.parse(await response.json());
  },
  /** The user's chats; `all`: everyone's, each naming its owner (admins). */
  async sessions(scope: 'own' | 'all' = 'own'): Promise<SessionSummary[]> {
    const response = await call(scope === 'all' ? '/api/sessions?scope=all' : '/api/sessions');
    if (!response.ok) throw new Error(`Could not load the sessions (${response.status})`);
    return SessionList.parse(await response.json()).sessions;
  },
  /** The chats (the person's, or with `all` everyone's: admins) whose title, messages or answers hold every word of `query`. */
  async search(query: string, scope: 'own' | 'all' = 'own', signal?: AbortSignal): Promise<SearchResults> {
    const params = new URLSearchParams({ q: query, ...(scope === 'all' ? { scope } : {}) });
    const response = await call(`/api/search?${params}`, signal ? { signal } : {});
    if (!response.ok) throw new Error(`Could not search: ${await errorMessage(response)}`);
    return SearchResults.parse(await response.json());
  },
  /** A session's messages and runs; undefined when the server does not know it. */
  async session(id: string): Promise<SessionDetail | undefined> {
    const response = await call(`/api/sessions/${encodeURIComponent(id)}`);
    if (response.status === 404 || response.status === 400) return undefined;
    if (!response.ok) throw new Error(`Could not load the session (${response.status})`);
    return SessionDetailSchema.parse(await response.json());
  },
  /** The session's snapshots and restore points, oldest first. */
  async snapshots(sessionId: string): Promise<SnapshotInfo[]> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/snapshots`);
    if (response.status === 404) return [];
    if (!response.ok) throw new Error(`Could not load the snapshots (${response.status})`);
    return SnapshotList.parse(await response.json()).snapshots;
  },
  /** Uploads one file into the session's folder; rejects with the server's reason. */
  async uploadFile(sessionId: string, file: File): Promise<void> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/files?name=${encodeURIComponent(file.name)}`, {
      method: 'POST',
      body: file,
      headers: { 'content-type': 'application/octet-stream' },
    });
    if (!response.ok) throw new Error(`Could not attach ${file.name}: ${withHumanSizes(await errorMessage(response))}`);
  },
  /** A session file's bytes, through the API (so the token goes along). */
  async fileBlob(sessionId: string, name: string): Promise<Blob> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/files/${encodeURIComponent(name)}`);
    if (!response.ok) throw new Error(`Could not download ${name}: ${await errorMessage(response)}`);
    return response.blob();
  },
  /** Downloads a session file and saves it. */
  async downloadFile(sessionId: string, name: string): Promise<void> {
    saveBlob(await api.fileBlob(sessionId, name), name);
  },
  /** Renames a chat (the server keeps the title from then on). */
  async renameSession(id: string, title: string): Promise<void> {
    const response = await call(`/api/sessions/${encodeURIComponent(id)}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ title }),
    });
    if (!response.ok) throw new Error(`Could not rename the chat: ${await errorMessage(response)}`);
  },

  /** Downloads the chat as Markdown or as JSON (the server names the file). */
  async exportChat(sessionId: string, format: 'markdown' | 'json'): Promise<void> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/export?format=${format}`);
    if (!response.ok) throw new Error(`Could not export the chat: ${await errorMessage(response)}`);
    const named = /filename\*=UTF-8''([^;]+)/.exec(response.headers.get('content-disposition') ?? '')?.[1];
    saveBlob(await response.blob(), named ? decodeURIComponent(named) : format === 'json' ? 'chat.json' : 'chat.md');
  },
  /** The chat's read-only links (its owner's view). */
  async shares(sessionId: string): Promise<ShareInfo[]> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/shares`);
    if (!response.ok) throw new Error(`Could not load the links: ${await errorMessage(response)}`);
    return ShareList.parse(await response.json()).shares;
  },
  /** Makes a read-only link; its token and page are in the answer only. */
  async createShare(sessionId: string, request: Partial<CreateShare>): Promise<ShareInfo> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/shares`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    if (!response.ok) throw new Error(`Could not make a link: ${await errorMessage(response)}`);
    return ShareInfo.parse(await response.json());
  },
  async revokeShare(sessionId: string, shareId: string): Promise<void> {
    const response = await call(`/api/sessions/${encodeURIComponent(sessionId)}/shares/${encodeURIComponent(shareId)}`, { method: 'DELETE' });
    if (!response.ok && response.status !== 404) throw new Error(`Could not revoke the link: ${await errorMessage(response)}`);
  },
  /** The chat a link shows (no sign-in needed); undefined when the link is gone. */
  async sharedChat(token: string): Promise<SharedChat | undefined> {
    const response = await fetch(`/api/shared/${encodeURIComponent(token)}`);
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`Could not load the shared chat: ${await errorMessage(response)}`);
    return SharedChat.parse(await response.json());
  },
  /** Downloads a file of a shared chat, when its link shows files. */
  async downloadSharedFile(token: string, name: string): Promise<void> {
    const response = await fetch(`/api/shared/${encodeURIComponent(token)}/files/${encodeURIComponent(name)}`);
    if (!response.ok) throw new Error(`Could not download ${name}: ${await errorMessage(response)}`);
    saveBlob(await response.blob(), name);
  },
  /** Copies a shared chat into a new chat of the signed-in person; rejects with AuthRequiredError when nobody is. */
  async copySharedChat(token: string): Promise<string> {
    const response = await call(`/api/shared/${encodeURIComponent(token)}/copy`, { method: 'POST' });
    if (!response.ok) throw new Error(`Could not copy the chat: ${await errorMessage(response)}`);
    return ChatCopy.parse(await response.json()).session_id;
  },

  /** Deletes a session and its files; `keepalive` lets the request outlive the page. */
  async deleteSession(id: string, options: { keepalive?: boolean } = {}): Promise<void> {
    const response = await call(`/api/sessions/${encodeURIComponent(id)}`, { method: 'DELETE', keepalive: options.keepalive === true });
    if (!response.ok && response.status !== 404) throw new Error(`Could not delete the session (${response.status})`);
  },
};

/** Saves bytes as a download named `name`. */
function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A settings change the server refused (`invalid_settings`, `setting_locked`, `admin_only`): nothing changed. */
export class SettingsRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly issues: NonNullable<ApiError['error']['issues']>,
  ) {
    super(message);
    this.name = 'SettingsRefused';
  }
}

/** The settings an admin changes in the app: `GET` and `PATCH /api/settings`. */
export const settingsApi = {
  async get(): Promise<SettingsView> {
    const response = await call('/api/settings');
    if (!response.ok) throw new Error(`Could not load the settings: ${await errorMessage(response)}`);
    return SettingsView.parse(await response.json());
  },
  /** Sends a change; rejects with SettingsRefused and every issue when the server refuses it. */
  async change(patch: Record<string, unknown>): Promise<SettingsView> {
    const response = await call('/api/settings', { method: 'PATCH', body: JSON.stringify(patch), headers: { 'content-type': 'application/json' } });
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { error?: Partial<ApiError['error']> };
      throw new SettingsRefused(body.error?.code ?? 'error', body.error?.message ?? `HTTP ${response.status}`, body.error?.issues ?? []);
    }
    return SettingsView.parse(await response.json());
  },
};

async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: Partial<ApiError['error']> };
    return body.error?.message ?? `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

/** The session the page shows, kept in the URL so that a reload rejoins it. */
export const sessionInUrl = {
  read(): string | undefined {
    return new URLSearchParams(window.location.search).get('session') ?? undefined;
  },
  write(id: string): void {
    const url = new URL(window.location.href);
    if (url.searchParams.get('session') === id) return;
    url.searchParams.set('session', id);
    window.history.replaceState(null, '', url);
  },
};

/** Web Push: the server's key, and this browser's subscription for the person signed in. */
/** A person's own webhook: where it is, and the secret its deliveries are signed with. */
export interface OwnWebhook {
  url: string | null;
  secret: string | null;
}

export const pushApi = {
  async ownWebhook(): Promise<OwnWebhook> {
    const response = await call('/api/notify/webhook');
    if (!response.ok) throw new Error(`Could not read your webhook: ${await errorMessage(response)}`);
    return (await response.json()) as OwnWebhook;
  },
  async setOwnWebhook(url: string | null): Promise<OwnWebhook> {
    const response = await call('/api/notify/webhook', {
      method: url === null ? 'DELETE' : 'PUT',
      ...(url === null ? {} : { body: JSON.stringify({ url }), headers: { 'content-type': 'application/json' } }),
    });
    if (!response.ok) throw new Error(await errorMessage(response));
    return url === null ? { url: null, secret: null } : ((await response.json()) as OwnWebhook);
  },
  async key(): Promise<string> {
    const response = await call('/api/push/key');
    if (!response.ok) throw new Error(`Could not read the push key: ${await errorMessage(response)}`);
    return ((await response.json()) as { public_key: string }).public_key;
  },
  async subscribe(subscription: PushSubscriptionJSON): Promise<void> {
    const response = await call('/api/push/subscriptions', {
      method: 'POST',
      body: JSON.stringify(subscription),
      headers: { 'content-type': 'application/json' },
    });
    if (!response.ok) throw new Error(`The server did not keep the push subscription: ${await errorMessage(response)}`);
  },
};
