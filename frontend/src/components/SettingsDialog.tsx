import { subscribeToPush } from '../lib/web-push.ts';
import { POLICY_WORDS } from './ToolPicker.tsx';
import type { McpServerStatus, SessionEvent } from '@stepwise/shared-types';
import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { healthSummary } from '../lib/model-health.ts';
import { changeSnippets, configFilePath, MCP_CONFIG_SNIPPET, settingsOrLimits } from '../lib/settings-snippets.ts';
import { formatClock, formatFull, formatWhen } from '../lib/time.ts';
import { CopyableSnippet } from './CopyableSnippet.tsx';
import { SettingsEditor } from './SettingsEditor.tsx';
import { OwnWebhook } from './OwnWebhook.tsx';

/**
 * What the server runs with, in one dialog: the model (and whether it works), the MCP servers,
 * the limits in force, and how to change them. Escape, Close or a click outside closes it.
 */
export function SettingsDialog({
  session,
  now,
  onClose,
  settingsAdmin = false,
}: {
  session: SessionEvent | undefined;
  now: Date;
  onClose: () => void;
  /** Whether this user may change the settings in the app: then the editor shows. */
  settingsAdmin?: boolean;
}) {
  const dialogRef = useRef<HTMLDialogElement>(null);
  const titleId = useId();

  // Modal from the start: focus moves in, the page behind is inert, Escape closes. Unmounting
  // removes it, which closes it too.
  useEffect(() => {
    const dialog = dialogRef.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);

  return (
    <dialog
      ref={dialogRef}
      className="settings-dialog"
      aria-labelledby={titleId}
      data-testid="settings"
      onClose={onClose}
      onClick={(event) => {
        // A click on the backdrop lands on the dialog itself.
        if (event.target === event.currentTarget) event.currentTarget.close();
      }}
    >
      <div className="settings-head">
        <h2 id={titleId}>Settings</h2>
        <button type="button" className="ghost settings-close" onClick={() => dialogRef.current?.close()}>
          Close
        </button>
      </div>
      {session ? (
        <div className="settings-body">
          <ModelSection session={session} now={now} />
          {settingsAdmin && (
            <Section title="Change settings">
              <SettingsEditor now={now} />
            </Section>
          )}
          <McpSection session={session} now={now} settingsAdmin={settingsAdmin} />
          <ApprovalSection session={session} />
          <LimitsSection session={session} />
          <NotificationsSection />
          <HowToChangeSection session={session} settingsAdmin={settingsAdmin} />
        </div>
      ) : (
        <p className="muted">Connecting to the server…</p>
      )}
    </dialog>
  );
}

/** Where this browser stands on notifications (asked once in the chat), and the way to turn them on. */
function NotificationsSection() {
  const supported = typeof Notification !== 'undefined';
  const [permission, setPermission] = useState(supported ? Notification.permission : 'denied');
  const [problem, setProblem] = useState('');
  const turnOn = async () => {
    const answer = await Notification.requestPermission();
    setPermission(answer);
    if (answer === 'granted') await subscribeToPush().catch((error: unknown) => setProblem((error as Error).message));
  };
  return (
    <Section title="Notifications">
      <p data-testid="settings-notifications">
        {!supported
          ? 'This browser cannot show notifications.'
          : permission === 'granted'
            ? 'On in this browser: when the agent needs you or a run ends while Stepwise is in the background (or closed, where the browser supports push), you get a notification.'
            : permission === 'denied'
              ? 'Blocked in this browser: allow notifications for this site in the browser’s settings to be told when the agent needs you.'
              : 'Off in this browser: turn them on to be told when the agent needs you or a run ends while Stepwise is in the background.'}
      </p>
      {supported && permission === 'default' && (
        <button type="button" className="primary" onClick={() => void turnOn()}>
          Turn on notifications
        </button>
      )}
      {problem && <p role="alert">Push could not be set up: {problem}</p>}
      <OwnWebhook />
      <p className="muted">The server’s own webhook is told of every chat (NOTIFY_WEBHOOK_URL, see the README).</p>
    </Section>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section className="settings-section" aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      {children}
    </section>
  );
}

function ModelSection({ session, now }: { session: SessionEvent; now: Date }) {
  const health = healthSummary(session);
  // The config file's "models": which model serves which purposes, in the order they are tried.
  const routes = (session.settings ?? []).filter((setting) => setting.name.startsWith('models.'));
  return (
    <Section title="Model">
      <dl className="settings-facts" data-testid="settings-model">
        <dt>Name</dt>
        <dd>
          <span className="settings-model-name">{session.model}</span> {session.demo && <span className="badge demo-badge">Demo</span>}
        </dd>
        {routes.length > 0 && (
          <>
            <dt>By purpose</dt>
            <dd>
              <ul className="settings-model-routes" data-testid="settings-model-routes">
                {routes.map((route) => (
                  <li key={route.name}>
                    <code>{route.name.slice('models.'.length)}</code> → {route.value}
                  </li>
                ))}
                <li>everything else → {session.model}</li>
              </ul>
            </dd>
          </>
        )}
        <dt>Endpoint</dt>
        <dd>{session.model_endpoint ? <code>{session.model_endpoint}</code> : session.demo ? 'Demo model, no endpoint' : 'The provider’s default endpoint'}</dd>
        <dt>Status</dt>
        <dd className={`health-text health-${health.status}`} data-testid="settings-health">
          <span className="health-dot" aria-hidden="true" /> {health.label}
          {health.message && <div className="health-message">{health.message}</div>}
          {health.hint && <div className="health-hint">{capitalize(health.hint)}</div>}
          {health.checkedAt && (
            <div className="muted">
              Checked{' '}
              <time dateTime={health.checkedAt} title={formatFull(health.checkedAt)}>
                {formatWhen(health.checkedAt, now)}
              </time>
            </div>
          )}
        </dd>
      </dl>
    </Section>
  );
}

const SERVER_STATUS: Record<McpServerStatus['status'], string> = {
  connecting: 'connecting…',
  connected: 'connected',
  unavailable: 'unavailable',
};

function McpSection({ session, now, settingsAdmin }: { session: SessionEvent; now: Date; settingsAdmin: boolean }) {
  const servers = session.mcp_servers ?? [];
  const configFile = configFilePath(session);
  return (
    <Section title="MCP servers">
      {servers.length === 0 ? (
        <p className="muted">No MCP servers are configured.</p>
      ) : (
        <ul className="mcp-servers" data-testid="mcp-servers">
          {servers.map((server) => (
            <li key={server.name} className={`mcp-server server-${server.status}`}>
              <div className="mcp-server-head">
                <strong>{server.name}</strong>
                <span className="badge">{server.transport}</span>
                <span className="mcp-server-status">{SERVER_STATUS[server.status]}</span>
                <span className="muted">
                  {server.tools} tool{server.tools === 1 ? '' : 's'}
                </span>
              </div>
              {server.error && <div className="mcp-server-error">{server.error}</div>}
              {server.status === 'unavailable' && server.retry_at && (
                <div className="muted">
                  Retrying at <time dateTime={server.retry_at}>{formatClock(server.retry_at, now)}</time>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
      <p>
        To add one, {settingsAdmin ? 'add it under Change settings above (no restart), or ' : ''}put an entry like this in{' '}
        <code data-testid="config-file">{configFile}</code> and restart Stepwise:
      </p>
      <CopyableSnippet label="the MCP config snippet" text={MCP_CONFIG_SNIPPET} />
    </Section>
  );
}

/** Each tool's approval policy: what runs unasked, what asks first, what never runs. */
function ApprovalSection({ session }: { session: SessionEvent }) {
  const tools = session.tools ?? [];
  return (
    <Section title="Tool approval">
      <p className="muted">
        A tool that asks waits for you to approve each call (with its arguments, which you may edit) before it runs. The config file's "approval" rules set this
        per tool or glob.
      </p>
      <ul className="approval-policies" data-testid="approval-policies">
        {tools.map((tool) => (
          <li key={tool.name}>
            <code>{tool.name}</code>: {POLICY_WORDS[tool.approval ?? 'auto']}
          </li>
        ))}
      </ul>
    </Section>
  );
}

function LimitsSection({ session }: { session: SessionEvent }) {
  const settings = settingsOrLimits(session);
  return (
    <Section title="Limits in force">
      <table className="settings-table" data-testid="settings-table">
        <thead>
          <tr>
            <th scope="col">Variable</th>
            <th scope="col">Value</th>
            <th scope="col">What it does</th>
          </tr>
        </thead>
        <tbody>
          {settings.map((setting) => (
            <tr key={setting.name}>
              <th scope="row">
                <code>{setting.name}</code>
              </th>
              <td>{setting.value}</td>
              <td>{setting.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

function HowToChangeSection({ session, settingsAdmin }: { session: SessionEvent; settingsAdmin: boolean }) {
  return (
    <Section title="How to change">
      {settingsAdmin && <p>The model, its endpoint, approval rules, MCP servers and limits change under Change settings above, with no restart.</p>}
      <p>
        {settingsAdmin
          ? 'Environment variables (which win over the app) are read when Stepwise starts: stop it, then start it again with the ones you want, e.g.'
          : 'Settings are environment variables, read when Stepwise starts: stop it, then start it again with the ones you want, e.g.'}
      </p>
      {changeSnippets(session.settings).map((snippet) => (
        <div key={snippet.title} className="settings-snippet">
          <p className="settings-snippet-title">{snippet.title}</p>
          <CopyableSnippet label={`the command for ${snippet.title.toLowerCase()}`} text={snippet.command} />
        </div>
      ))}
    </Section>
  );
}

function capitalize(text: string): string {
  return text ? text[0]!.toUpperCase() + text.slice(1) : text;
}
