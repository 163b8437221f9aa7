import type { SessionEvent } from '@stepwise/shared-types';
import type { ConnectionState } from '../state/view-state.ts';

const CONNECTION_LABEL: Record<ConnectionState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

/** The app bar: name, the model in use, and the connection. */
export function Header({
  session,
  connection,
  onToggleSidebar,
}: {
  session: SessionEvent | undefined;
  connection: ConnectionState;
  onToggleSidebar: () => void;
}) {
  return (
    <header className="app-header">
      <button type="button" className="ghost sidebar-toggle" onClick={onToggleSidebar} aria-label="Chats">
        ☰
      </button>
      <div className="brand">
        <span className="logo" aria-hidden="true">◆</span> Stepwise
      </div>
      <div className="model" data-testid="model">
        {session && (
          <>
            <span className="model-name">{session.model}</span>
            {session.demo && <span className="badge demo-badge">Demo model</span>}
          </>
        )}
      </div>
      <div className={`connection connection-${connection}`} role="status" aria-label={`Connection: ${CONNECTION_LABEL[connection]}`}>
        <span className="connection-dot" aria-hidden="true" />
        {CONNECTION_LABEL[connection]}
      </div>
      {session?.demo && (
        <p className="demo-hint">
          This is the offline demo model. To use a real one, start Stepwise with <code>OPENAI_BASE_URL</code> (and{' '}
          <code>OPENAI_API_KEY</code>) pointing at any OpenAI-compatible endpoint.
        </p>
      )}
    </header>
  );
}
