import type { SharedChat } from '@stepwise/shared-types';
import { useEffect, useMemo, useState } from 'react';
import { api } from '../lib/api.ts';
import { AuthRequiredError, SignInRequiredError } from '../lib/auth.ts';
import { RunActionsContext, runActionsOf } from '../lib/run-actions-context.ts';
import { formatFull } from '../lib/time.ts';
import { useNow } from '../lib/use-now.ts';
import { reduce } from '../state/reducer.ts';
import { initialViewState, type ViewState } from '../state/view-state.ts';
import { Conversation } from './Conversation.tsx';

/** The chat a link shows, as the web app's reducer reads its log (nothing runs: the view is still). */
function viewOf(shared: SharedChat): ViewState {
  let state: ViewState = { ...initialViewState, connection: 'live' };
  state = reduce(state, { kind: 'history_loaded', sessionId: shared.chat.session.id, messages: shared.chat.messages });
  for (const event of shared.chat.events) state = reduce(state, { kind: 'server_event', event });
  return { ...state, busy: false, stopping: false };
}

/**
 * A shared chat, read-only (`/?shared=TOKEN`): its steps, tools and answers as they stood when the
 * link was made, for anyone with the link and no sign-in; nothing here sends, stops or lists other
 * chats. A signed-in person may continue it as a copy of their own.
 */
export function SharedChatPage({ token }: { token: string }) {
  const [shared, setShared] = useState<SharedChat | null | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [copyProblem, setCopyProblem] = useState<string | undefined>();
  const [copying, setCopying] = useState(false);
  const now = useNow();
  useEffect(() => {
    api.sharedChat(token).then(
      (found) => setShared(found ?? null),
      (failure: Error) => setError(failure.message),
    );
  }, [token]);
  const state = useMemo(() => (shared ? viewOf(shared) : undefined), [shared]);
  useEffect(() => {
    if (shared) document.title = `${shared.chat.session.title ?? 'Shared chat'} · Stepwise`;
  }, [shared]);

  const copy = () => {
    setCopying(true);
    api.copySharedChat(token).then(
      (sessionId) => window.location.assign(`/?session=${encodeURIComponent(sessionId)}`),
      (failure: Error) => {
        setCopying(false);
        setCopyProblem(
          failure instanceof AuthRequiredError || failure instanceof SignInRequiredError
            ? 'Sign in to this Stepwise to continue the chat as a copy of your own.'
            : failure.message,
        );
      },
    );
  };

  return (
    <div className="layout shared-view" data-testid="shared-chat">
      <div className="app">
        <header className="app-header">
          <div className="brand">
            <span className="logo" aria-hidden="true">
              ◆
            </span>{' '}
            Stepwise
          </div>
          <span className="badge">Shared chat · read-only</span>
        </header>
        {shared === undefined && !error && <p className="muted shared-status">Loading the shared chat…</p>}
        {error && <p className="failure shared-status">{error}</p>}
        {shared === null && (
          <div className="shared-status" role="alert" data-testid="shared-gone">
            <h1>This link shows nothing</h1>
            <p>It does not exist, was revoked by the chat’s owner, or has expired.</p>
          </div>
        )}
        {shared && state && (
          <>
            <div className="shared-banner" role="note">
              <h1 className="shared-title">{shared.chat.session.title ?? 'Untitled chat'}</h1>
              <p className="muted">
                A read-only copy of this chat as it stood on <time dateTime={shared.shared_at}>{formatFull(shared.shared_at)}</time>
                {shared.expires_at && (
                  <>
                    ; the link works until <time dateTime={shared.expires_at}>{formatFull(shared.expires_at)}</time>
                  </>
                )}
                .
              </p>
            </div>
            {/* Its panels read the session's todo list; nothing here edits or goes on. */}
            <RunActionsContext.Provider value={runActionsOf(state)}>
              <Conversation state={state} now={now} />
            </RunActionsContext.Provider>
            <div className="dock shared-dock">
              {shared.files && shared.files.length > 0 && (
                <ul className="shared-files" aria-label="Files">
                  {shared.files.map((file) => (
                    <li key={file.name}>
                      <button
                        type="button"
                        className="ghost"
                        onClick={() => void api.downloadSharedFile(token, file.name).catch((failure: Error) => setCopyProblem(failure.message))}
                      >
                        {file.name}
                      </button>
                    </li>
                  ))}
                </ul>
              )}
              <div className="watch-bar" role="status">
                <span>You are reading a shared chat: nothing can be sent from here.</span>
                <button type="button" onClick={copy} disabled={copying}>
                  Continue as a copy
                </button>
              </div>
              {copyProblem && (
                <p className="failure" role="alert">
                  {copyProblem}
                </p>
              )}
            </div>
          </>
        )}
      </div>
    </div>
  );
}
