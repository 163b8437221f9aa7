import type { Me, SessionEvent } from '@stepwise/shared-types';
import { healthSummary } from '../lib/model-health.ts';
import { formatWhen } from '../lib/time.ts';
import type { ConnectionState } from '../state/view-state.ts';
import { GearIcon } from './Icons.tsx';

const CONNECTION_LABEL: Record<ConnectionState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

/** What the demo badge says on hover; the empty conversation says it in full. */
export const DEMO_HINT =
  'This is the offline demo model. To use a real one, start Stepwise with OPENAI_BASE_URL (and OPENAI_API_KEY) pointing at any OpenAI-compatible endpoint.';

/**
 * The app bar, one line on every screen: name, the model in use and its health, Settings, and the
 * connection. When the model fails, a warning with what to do spans a second line.
 */
export function Header({
  session,
  connection,
  now,
  onToggleSidebar,
  onOpenSettings,
  onOpenSnapshots,
  onOpenShare,
  approvalsWaiting = 0,
  me,
}: {
  session: SessionEvent | undefined;
  connection: ConnectionState;
  now: Date;
  onToggleSidebar: () => void;
  onOpenSettings: () => void;
  onOpenSnapshots?: () => void;
  /** Opens export and share (offered once the chat has something in it). */
  onOpenShare?: (() => void) | undefined;
  /** Tool calls waiting for the person's approval. */
  approvalsWaiting?: number;
  /** Who is signed in (shown when there are several users: AUTH_MODE oidc or header). */
  me?: Me | undefined;
}) {
  const health = healthSummary(session);
  const checked = health.checkedAt ? ` (checked ${formatWhen(health.checkedAt, now)})` : '';
  return (
    <header className="app-header">
      <button type="button" className="ghost sidebar-toggle" onClick={onToggleSidebar} aria-label="Chats">
        ☰
      </button>
      <div className="brand">
        <span className="logo" aria-hidden="true">
          ◆
        </span>{' '}
        Stepwise
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
        {health.status === 'ok' && (
          <span className="health" title={`${health.label}${checked}`}>
            <span className="health-dot health-ok" role="img" aria-label={`${health.label}${checked}`} data-testid="model-health" />
            <span className="health-label" aria-hidden="true">
              Model OK
            </span>
          </span>
        )}
      </div>
      {approvalsWaiting > 0 && (
        <button
          type="button"
          className="badge approvals-waiting"
          data-testid="approvals-waiting"
          onClick={() => document.querySelector('[data-testid="approval"]')?.scrollIntoView({ block: 'center' })}
          title="Tool calls waiting for your approval: show the first"
        >
          {approvalsWaiting} approval{approvalsWaiting === 1 ? '' : 's'} waiting
        </button>
      )}
      {onOpenSnapshots && (
        <button
          type="button"
          className="ghost settings-button"
          onClick={onOpenSnapshots}
          aria-haspopup="dialog"
          aria-label="Snapshots"
          title="Snapshots: save the conversation, roll back, resume"
        >
          <span aria-hidden="true">⟲</span>
          <span className="settings-button-label" aria-hidden="true">
            Snapshots
          </span>
        </button>
      )}
      {onOpenShare && (
        <button
          type="button"
          className="ghost settings-button"
          onClick={onOpenShare}
          aria-haspopup="dialog"
          aria-label="Export and share"
          title="Export and share: download the chat, make a read-only link"
        >
          <span aria-hidden="true">⇪</span>
          <span className="settings-button-label" aria-hidden="true">
            Share
          </span>
        </button>
      )}
      <button type="button" className="ghost settings-button" onClick={onOpenSettings} aria-haspopup="dialog" aria-label="Settings" title="Settings">
        <GearIcon />
        <span className="settings-button-label" aria-hidden="true">
          Settings
        </span>
      </button>
      {me && (me.auth_mode === 'oidc' || me.auth_mode === 'header') && (
        <div className="user" data-testid="user">
          <span className="user-name" title={me.user.email ?? me.user.name}>
            {me.user.name}
            {me.user.admin && <span className="badge admin-badge">admin</span>}
          </span>
          {me.logout_url && (
            <a className="ghost button sign-out" href={me.logout_url}>
              Sign out
            </a>
          )}
        </div>
      )}
      <div
        className={`connection connection-${connection}`}
        role="status"
        aria-label={`Connection: ${CONNECTION_LABEL[connection]}`}
        title={CONNECTION_LABEL[connection]}
      >
        <span className="connection-dot" aria-hidden="true" />
        <span className="connection-label">{CONNECTION_LABEL[connection]}</span>
      </div>
      {health.status === 'failing' && (
        <div className="health-warning" role="alert" data-testid="model-health-warning">
          <span aria-hidden="true">⚠</span> <strong>{health.label}</strong>
          {health.message && <span className="health-warning-message">: {health.message}</span>}
          {health.hint && <span className="health-warning-hint"> · {health.hint}</span>}{' '}
          <button type="button" className="link-button" onClick={onOpenSettings}>
            Details
          </button>
        </div>
      )}
    </header>
  );
}
