import { useSteering } from '../lib/steering-context.ts';
import { branchKind } from '../state/branch-kind.ts';
import { branchPlace, steerPlace } from '../state/steering.ts';
import type { PendingMessageView, SteerView } from '../state/view-state.ts';

/** What a waiting message (to a run of `strategy`, when known) waits for, in words. */
function waitingWords(message: PendingMessageView, strategy: string | undefined): string {
  if (message.status === 'sending') return 'sending…';
  if (message.status === 'cancelling') return 'cancelling…';
  const to = message.nodeId ? ` of ${branchKind(strategy, message.nodeId)} ${message.nodeId}` : '';
  switch (message.delivery) {
    case 'queue':
      return 'queued: it starts the next run when this one ends';
    case 'interrupt':
      return `queued: it interrupts the model call${to} in flight`;
    default:
      return `queued: it reaches the run${to} before its next model call`;
  }
}

/** A message a person sent during a run (of `strategy`), where it landed: "applied at step 3" (or the step it interrupted), "reached task 1.2". */
export function SteerNote({ steer, unit = 'step', strategy }: { steer: SteerView; unit?: string; strategy?: string }) {
  const place = steer.nodeId ? branchPlace(steer, strategy) : steerPlace(steer, unit);
  return (
    <div className="steer-note" data-testid="steer-applied" data-message-id={steer.messageId}>
      <div className="bubble">{steer.content}</div>
      <p className="steer-place">Your message: {place}</p>
      {steer.partial && (
        <details className="steer-partial">
          <summary>What the model had said when it was cut</summary>
          <p>{steer.partial}</p>
        </details>
      )}
    </div>
  );
}

/** Messages that wait for a run (of `strategy`, when known) or for it to end, each with Cancel while it can still be withdrawn. */
export function WaitingMessages({ messages, label, strategy }: { messages: PendingMessageView[]; label: string; strategy?: string }) {
  const steering = useSteering();
  if (messages.length === 0) return null;
  return (
    <ul className="waiting-messages" aria-label={label}>
      {messages.map((message) => (
        <li key={message.id} className="steer-note steer-waiting" data-testid="steer-waiting" data-delivery={message.delivery}>
          <div className="bubble">{message.content}</div>
          <p className="steer-place">
            <span role="status">{waitingWords(message, strategy)}</span>
            {steering && !steering.readOnly && message.status === 'waiting' && (
              <button type="button" className="link" onClick={() => steering.cancel(message.id)}>
                Cancel
              </button>
            )}
          </p>
        </li>
      ))}
    </ul>
  );
}
