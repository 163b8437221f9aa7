import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';

/** Where a run's events go: the session log in production, an array in unit tests. */
export interface EventSink {
  /**
   * Logs and delivers one event, in the order of the calls: it is stored, then sent. Resolves once
   * it has its place in the log, not necessarily stored yet (see `flush`); rejects when an event
   * emitted earlier could not be stored.
   */
  emit(event: LoggedEventBody): Promise<void>;
  /** Resolves once every event emitted so far is stored and sent; rejects when one could not be stored. */
  flush(): Promise<void>;
  /** Delivers a streaming preview; not logged, may be dropped. */
  preview(delta: DeltaEvent): void;
  /** Delivers a tool's progress report; not logged, never ahead of the events before it. */
  progress(event: ToolProgressEvent): void;
}
