import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';

/** Where a run's events go: the session log in production, an array in unit tests. */
export interface EventSink {
  /** Logs and delivers one event; resolves once it is stored, so callers keep the order. */
  emit(event: LoggedEventBody): Promise<void>;
  /** Delivers a streaming preview; not logged, may be dropped. */
  preview(delta: DeltaEvent): void;
  /** Delivers a tool's progress report; not logged, never ahead of the events before it. */
  progress(event: ToolProgressEvent): void;
}
