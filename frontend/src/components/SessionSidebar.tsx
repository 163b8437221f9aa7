import type { SessionSummary } from '@stepwise/shared-types';
import { useCallback, useEffect, useState } from 'react';
import { api } from '../lib/api.ts';

/** Past sessions: open one, start a new chat, delete. Opening one loads the page for it. */
export function SessionSidebar({ currentId, refreshKey, open, onClose }: { currentId: string | undefined; refreshKey: number; open: boolean; onClose: () => void }) {
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [error, setError] = useState<string | undefined>();

  const load = useCallback(() => {
    api.sessions().then(
      (list) => {
        setSessions(list);
        setError(undefined);
      },
      (failure: Error) => setError(failure.message),
    );
  }, []);

  useEffect(load, [load, refreshKey]);

  const remove = async (id: string) => {
    try {
      await api.deleteSession(id);
      if (id === currentId) window.location.assign('/');
      else load();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <nav className={`sidebar ${open ? 'sidebar-open' : ''}`} aria-label="Chats">
      <div className="sidebar-head">
        <a className="button primary new-chat" href="/">
          New chat
        </a>
        <button type="button" className="ghost sidebar-close" onClick={onClose} aria-label="Close the chat list">
          ×
        </button>
      </div>
      {error && <p className="sidebar-error">{error}</p>}
      <ul className="session-list">
        {sessions.map((session) => (
          <li key={session.id} className={session.id === currentId ? 'current' : ''}>
            <a href={`/?session=${encodeURIComponent(session.id)}`} aria-current={session.id === currentId ? 'page' : undefined}>
              <span className="session-title">{session.title ?? 'New chat'}</span>
              <time className="session-time" dateTime={session.last_activity_at}>
                {formatWhen(session.last_activity_at)}
              </time>
            </a>
            <button type="button" className="ghost delete" onClick={() => void remove(session.id)} aria-label={`Delete “${session.title ?? 'New chat'}”`}>
              ×
            </button>
          </li>
        ))}
        {sessions.length === 0 && !error && <li className="muted empty-list">No chats yet.</li>}
      </ul>
    </nav>
  );
}

function formatWhen(iso: string): string {
  const date = new Date(iso);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleDateString();
}
