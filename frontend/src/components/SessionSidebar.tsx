import type { SessionSummary } from '@stepwise/shared-types';
import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../lib/api.ts';
import { DeferredDeletes, type PendingDeletion } from '../lib/deferred-deletes.ts';
import { formatFull, formatWhen } from '../lib/time.ts';
import { useNow } from '../lib/use-now.ts';
import { UndoToast } from './UndoToast.tsx';
import { ChatSearchBox, ChatSearchResults } from './ChatSearchResults.tsx';
import { jumpToSearchMatch } from '../lib/search-jump.ts';

const SCOPE_KEY = 'stepwise.chatScope';

function readScope(): string | null {
  try {
    return sessionStorage.getItem(SCOPE_KEY);
  } catch {
    return null;
  }
}

/** How long a deleted chat can be brought back before the request goes out. */
export const UNDO_DELETE_MS = 5_000;

/** Past sessions: open one, start a new chat, delete (with a few seconds to undo). Opening one loads the page for it. */
export function SessionSidebar({
  currentId,
  refreshKey,
  open,
  onClose,
  admin = false,
  userId,
}: {
  currentId: string | undefined;
  refreshKey: number;
  open: boolean;
  onClose: () => void;
  /** An admin may switch to everyone's chats. */
  admin?: boolean;
  /** The signed-in user: in everyone's list, only their own chats can be renamed or deleted. */
  userId?: string | undefined;
}) {
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  // An admin's choice of list stays across the page loads that opening a chat makes.
  const [scope, setScopeState] = useState<'own' | 'all'>(() => (admin && readScope() === 'all' ? 'all' : 'own'));
  const setScope = (next: 'own' | 'all') => {
    setScopeState(next);
    try {
      sessionStorage.setItem(SCOPE_KEY, next);
    } catch {
      // Storage may be off: the choice then lasts until the page reloads.
    }
  };
  useEffect(() => {
    if (admin && readScope() === 'all') setScopeState('all');
  }, [admin]);
  const [error, setError] = useState<string | undefined>();
  const [pending, setPending] = useState<PendingDeletion[]>([]);
  const [renaming, setRenaming] = useState<string | undefined>();
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState('');
  const searching = query.trim().length > 0;
  const now = useNow();
  // A chat opened from a search hit scrolls to the match once its log is shown.
  useEffect(() => jumpToSearchMatch(), []);

  const load = useCallback(() => {
    api.sessions(scope).then(
      (list) => {
        setSessions(list);
        setError(undefined);
      },
      (failure: Error) => setError(failure.message),
    );
  }, [scope]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: refreshKey is the trigger: a response completed, the list may have changed
  useEffect(load, [load, refreshKey]);

  // Deleting the open chat leaves it for a new one; any other deletion refreshes the list.
  const afterDelete = useRef<(id: string) => void>(() => undefined);
  useEffect(() => {
    afterDelete.current = (id) => (id === currentId ? window.location.assign('/') : load());
  }, [currentId, load]);
  const [deletes] = useState(
    () =>
      new DeferredDeletes({
        delayMs: UNDO_DELETE_MS,
        remove: (id, options) => api.deleteSession(id, options),
        onChange: setPending,
        onDeleted: (id) => afterDelete.current(id),
        onError: (_id, failure) => setError(failure.message),
      }),
  );

  // Leaving the page must not lose a deletion the user meant: what still waits goes out at once.
  useEffect(() => {
    const flush = () => deletes.flush();
    window.addEventListener('pagehide', flush);
    return () => window.removeEventListener('pagehide', flush);
  }, [deletes]);

  const visible = sessions.filter((session) => !pending.some((deletion) => deletion.id === session.id));

  return (
    <>
      {open && <div className="sidebar-backdrop" aria-hidden="true" onClick={onClose} />}
      <nav className={`sidebar ${open ? 'sidebar-open' : ''}`} aria-label="Chats">
        <div className="sidebar-head">
          <a className="button primary new-chat" href="/">
            New chat
          </a>
          <button type="button" className="ghost sidebar-close" onClick={onClose} aria-label="Close the chat list">
            ×
          </button>
        </div>
        {admin && (
          <div className="scope-switch" role="group" aria-label="Whose chats">
            <button type="button" className={scope === 'own' ? 'ghost active' : 'ghost'} aria-pressed={scope === 'own'} onClick={() => setScope('own')}>
              My chats
            </button>
            <button type="button" className={scope === 'all' ? 'ghost active' : 'ghost'} aria-pressed={scope === 'all'} onClick={() => setScope('all')}>
              All chats
            </button>
          </div>
        )}
        <ChatSearchBox query={query} onChange={setQuery} />
        {searching && <ChatSearchResults query={query} scope={scope} userId={userId} />}
        {error && <p className="sidebar-error">{error}</p>}
        <ul className="session-list" hidden={searching}>
          {visible.map((session) => (
            <li key={session.id} className={session.id === currentId ? 'current' : ''}>
              {renaming === session.id ? (
                <form
                  className="rename-form"
                  onSubmit={(event) => {
                    event.preventDefault();
                    const title = draft.trim();
                    if (!title) return;
                    api.renameSession(session.id, title).then(
                      () => {
                        setRenaming(undefined);
                        load();
                      },
                      (failure: Error) => setError(failure.message),
                    );
                  }}
                >
                  <input
                    aria-label="New name for the chat"
                    value={draft}
                    maxLength={200}
                    autoFocus
                    onChange={(event) => setDraft(event.target.value)}
                    onKeyDown={(event) => {
                      if (event.key === 'Escape') {
                        event.preventDefault();
                        setRenaming(undefined);
                      }
                    }}
                  />
                  <button type="submit" className="ghost" disabled={!draft.trim()}>
                    Save
                  </button>
                </form>
              ) : (
                <a href={`/?session=${encodeURIComponent(session.id)}`} aria-current={session.id === currentId ? 'page' : undefined}>
                  <span className="session-title">{session.title ?? 'New chat'}</span>
                  {session.owner && session.owner.id !== userId && (
                    <span className="session-owner">{session.owner.name ?? (session.owner.id || 'Before sign-in')}</span>
                  )}
                  <time className="session-time" dateTime={session.last_activity_at} title={formatFull(session.last_activity_at)}>
                    {formatWhen(session.last_activity_at, now)}
                  </time>
                </a>
              )}
              {(!session.owner || session.owner.id === userId) && (
                <>
                  <button
                    type="button"
                    className="ghost rename"
                    onClick={() => {
                      setDraft(session.title ?? '');
                      setRenaming(session.id);
                    }}
                    aria-label={`Rename “${session.title ?? 'New chat'}”`}
                    title="Rename this chat"
                  >
                    ✎
                  </button>
                  <button
                    type="button"
                    className="ghost delete"
                    onClick={() => deletes.schedule(session.id, session.title ?? 'New chat')}
                    aria-label={`Delete “${session.title ?? 'New chat'}”`}
                    title="Delete this chat and its files"
                  >
                    ×
                  </button>
                </>
              )}
            </li>
          ))}
          {visible.length === 0 && !error && <li className="muted empty-list">No chats yet.</li>}
        </ul>
      </nav>
      {pending.length > 0 && (
        <div className="toasts">
          {pending.map((deletion) => (
            <UndoToast
              key={deletion.id}
              message={deletion.id === currentId ? `Deleting this chat “${deletion.title}” and its files` : `Deleted “${deletion.title}” and its files`}
              durationMs={UNDO_DELETE_MS}
              onUndo={() => deletes.undo(deletion.id)}
            />
          ))}
        </div>
      )}
    </>
  );
}
