import type { EventSink } from '@stepwise/backend';
import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';

/** An EventSink that keeps everything in arrays, for unit tests of a strategy. */
export class ArraySink implements EventSink {
  readonly events: LoggedEventBody[] = [];
  readonly previews: DeltaEvent[] = [];
  readonly progressReports: ToolProgressEvent[] = [];
  private readonly waiting = new Set<() => void>();

  async emit(event: LoggedEventBody): Promise<void> {
    this.events.push(event);
    for (const wake of [...this.waiting]) {
      this.waiting.delete(wake);
      wake();
    }
  }

  async flush(): Promise<void> {}

  preview(delta: DeltaEvent): void {
    this.previews.push(delta);
  }

  progress(event: ToolProgressEvent): void {
    this.progressReports.push(event);
  }

  /** The events as short names: `agent_reason:1`, `tool_complete:calculator`, `response_complete`. */
  summary(): string[] {
    return this.events.map((event) => {
      if (event.type === 'agent_update') {
        const step = 'step' in event && event.step !== undefined ? `:${event.step}` : '';
        return event.update_type === 'agent_completion' ? `agent_completion:${event.reason}` : `${event.update_type}${step}`;
      }
      if (event.type === 'tool_start' || event.type === 'tool_complete' || event.type === 'tool_error') return `${event.type}:${event.tool_name}`;
      return event.type;
    });
  }

  /** Resolves once an event matching `predicate` has been emitted. */
  async until(predicate: (event: LoggedEventBody) => boolean): Promise<LoggedEventBody> {
    for (;;) {
      const found = this.events.find(predicate);
      if (found) return found;
      await new Promise<void>((resolve) => this.waiting.add(resolve));
    }
  }
}
