import { describeEvent, describeUpdateType, fieldsOf } from '../state/strategy-events.ts';
import type { StrategyEventView } from '../state/view-state.ts';

/** A strategy's own events as a compact list: what happened in words, one line of its fields, the whole event on demand. */
export function StrategyEventList({ events, label }: { events: StrategyEventView[]; label: string }) {
  if (events.length === 0) return null;
  return (
    <ol className="strategy-events" aria-label={label} data-testid="strategy-events">
      {events.map((event) => {
        const summary = describeEvent(event);
        return (
          <li key={event.seq} data-update-type={event.updateType}>
            <details>
              <summary title={event.updateType}>
                <span className="strategy-event-name">{describeUpdateType(event.updateType)}</span>
                {summary && <span className="strategy-event-summary">{summary}</span>}
              </summary>
              <pre className="strategy-event-fields">{JSON.stringify(fieldsOf(event), null, 2)}</pre>
            </details>
          </li>
        );
      })}
    </ol>
  );
}
