import type { SessionEvent } from '@stepwise/shared-types';
import type { ConnectionState } from '../state/view-state.ts';

const CONNECTION_LABEL: Record<ConnectionState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

/** What the demo badge says on hover; the empty conversation says it in full. */
export const DEMO_HINT = 'This is the offline demo model. To use a real one, start Stepwise with OPENAI_BASE_URL (and OPENAI_API_KEY) pointing at any OpenAI-compatible endpoint.';

/** The app bar, one line on every screen: name, the model in use, and the connection. */
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
        {session &&
          (session.demo ? (
            // The demo's own name says "demo" at length; the badge says it in a word, and the rest on hover.
            <span className="badge demo-badge" title={`${session.model}. ${DEMO_HINT}`}>
              Demo model
            </span>
          ) : (
            <span className="model-name" title={session.model}>
              {session.model}
            </span>
          ))}
      </div>
      <div className={`connection connection-${connection}`} role="status" aria-label={`Connection: ${CONNECTION_LABEL[connection]}`} title={CONNECTION_LABEL[connection]}>
        <span className="connection-dot" aria-hidden="true" />
        <span className="connection-label">{CONNECTION_LABEL[connection]}</span>
      </div>
    </header>
  );
}
