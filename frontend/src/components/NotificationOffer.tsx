import { useState } from 'react';
import { subscribeToPush } from '../lib/web-push.ts';

const DISMISSED = 'stepwise.notifications.offer';

/** Whether to offer notifications: the browser can show them, nobody decided yet, and the offer was not put off. */
function shouldOffer(): boolean {
  if (typeof Notification === 'undefined' || Notification.permission !== 'default') return false;
  try {
    return localStorage.getItem(DISMISSED) !== 'dismissed';
  } catch {
    return true;
  }
}

/**
 * Asks once, saying why, whether the browser may notify the person when the agent needs them or a
 * run ends while the tab is in the background. Shown while the agent waits on the person, when the
 * reason is plain; browsers ask for permission only after a click.
 */
export function NotificationOffer() {
  const [open, setOpen] = useState(shouldOffer);
  if (!open) return null;
  const dismiss = () => {
    try {
      localStorage.setItem(DISMISSED, 'dismissed');
    } catch {
      // Private mode: asked again next time.
    }
    setOpen(false);
  };
  return (
    <section className="notification-offer" aria-label="Notifications">
      <p>Get a notification when the agent needs you, or a run ends, while this tab is in the background?</p>
      <div className="notification-offer-actions">
        <button
          type="button"
          className="primary"
          onClick={() =>
            void Notification.requestPermission()
              .then((permission) => (permission === 'granted' ? subscribeToPush() : undefined))
              .catch(() => undefined)
              .finally(() => setOpen(false))
          }
        >
          Notify me
        </button>
        <button type="button" className="ghost" onClick={dismiss}>
          Not now
        </button>
      </div>
    </section>
  );
}
