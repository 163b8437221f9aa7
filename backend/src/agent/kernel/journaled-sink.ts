import type { DeltaEvent, LoggedEventBody, ToolProgressEvent } from '@stepwise/shared-types';
import type { EventSink } from './event-sink.ts';
import type { RunFiles } from './strategy.ts';

/**
 * A run's sink when its journal commits apart from the store (Restate): each event waits for the
 * journal entries recorded before it, so that nothing is shown that a replay would not find
 * recorded; previews and progress keep their place behind the events still waiting.
 */
export class AfterJournalSink implements EventSink {
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly sink: EventSink,
    private readonly journaled: () => Promise<void>,
  ) {}

  emit(event: LoggedEventBody): Promise<void> {
    const before = this.journaled();
    this.after(async () => {
      await before;
      await this.sink.emit(event);
    });
    const failure = this.failure;
    this.failure = undefined;
    return failure ? Promise.reject(failure.error) : Promise.resolve();
  }

  async flush(): Promise<void> {
    await this.chain;
    const failure = this.failure;
    this.failure = undefined;
    if (failure) throw failure.error;
    await this.sink.flush();
  }

  preview(delta: DeltaEvent): void {
    if (this.waiting === 0) this.sink.preview(delta);
    else this.after(async () => this.sink.preview(delta));
  }

  progress(event: ToolProgressEvent): void {
    if (this.waiting === 0) this.sink.progress(event);
    else this.after(async () => this.sink.progress(event));
  }

  private after(step: () => Promise<void>): void {
    this.waiting++;
    this.chain = this.chain
      .then(step)
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.waiting--);
  }
}

/** Files kept in memory for one run: for kernels without a session folder (unit tests). */
export function memoryFiles(): RunFiles {
  const files = new Map<string, string>();
  return {
    read: async (name) => files.get(name),
    write: async (name, content) => void files.set(name, content),
  };
}
