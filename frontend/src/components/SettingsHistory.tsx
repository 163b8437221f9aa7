import type { SettingsChange } from '@stepwise/shared-types';
import { formatFull, formatWhen } from '../lib/time.ts';

/** The latest changes of the settings, newest first: who, when, each setting before and after (a secret only as set or not). */
export function SettingsHistory({ changes, now }: { changes: SettingsChange[]; now: Date }) {
  if (changes.length === 0) return <p className="muted">No setting has been changed in the app yet.</p>;
  return (
    <ol className="settings-history" data-testid="settings-history">
      {changes.map((change) => (
        <li key={change.version}>
          <div className="settings-history-head">
            <strong>{change.by.name || change.by.id}</strong>{' '}
            <time dateTime={change.at} title={formatFull(change.at)}>
              {formatWhen(change.at, now)}
            </time>{' '}
            <span className="muted">version {change.version}</span>
          </div>
          <ul>
            {change.changes.map((item) => (
              <li key={item.setting}>
                <code>{item.setting}</code>: <span className="muted">{item.before ?? 'not set in the app'}</span> → {item.after ?? 'not set in the app'}
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}
