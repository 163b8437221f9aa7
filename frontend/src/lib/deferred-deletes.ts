/** A chat the user deleted that can still be brought back. */
export interface PendingDeletion {
  id: string;
  title: string;
  /** When the delete request goes out (ms since the epoch). */
  deadline: number;
}

export interface DeferredDeletesOptions {
  /** How long the user has to undo. */
  delayMs: number;
  /** Deletes for real; `keepalive` when the page is going away and the request must outlive it. */
  remove: (id: string, options: { keepalive: boolean }) => Promise<void>;
  /** The pending deletions changed (one was added, undone or sent). */
  onChange?: (pending: PendingDeletion[]) => void;
  onDeleted?: (id: string) => void;
  onError?: (id: string, error: Error) => void;
  now?: () => number;
  setTimer?: (run: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/**
 * Deleting a chat takes its messages and files for good, so the request waits a few seconds in
 * which the user can undo; leaving the page sends what is still waiting at once.
 */
export class DeferredDeletes {
  private readonly pending = new Map<string, { deletion: PendingDeletion; timer: unknown }>();
  private readonly now: () => number;
  private readonly setTimer: (run: () => void, ms: number) => unknown;
  private readonly clearTimer: (timer: unknown) => void;

  constructor(private readonly options: DeferredDeletesOptions) {
    this.now = options.now ?? Date.now;
    this.setTimer = options.setTimer ?? ((run, ms) => setTimeout(run, ms));
    this.clearTimer = options.clearTimer ?? ((timer) => clearTimeout(timer as ReturnType<typeof setTimeout>));
  }

  /** The deletions that can still be undone, oldest first. */
  list(): PendingDeletion[] {
    return [...this.pending.values()].map((entry) => entry.deletion);
  }

  has(id: string): boolean {
    return this.pending.has(id);
  }

  /** Deletes the chat once the delay has passed, unless undone. */
  schedule(id: string, title: string): void {
    if (this.pending.has(id)) return;
    const deletion = { id, title, deadline: this.now() + this.options.delayMs };
    const timer = this.setTimer(() => void this.send(id, false), this.options.delayMs);
    this.pending.set(id, { deletion, timer });
    this.changed();
  }

  /** Keeps the chat; true when it was still waiting. */
  undo(id: string): boolean {
    const entry = this.pending.get(id);
    if (!entry) return false;
    this.clearTimer(entry.timer);
    this.pending.delete(id);
    this.changed();
    return true;
  }

  /** Sends every waiting deletion now (the page is being left). */
  flush(): void {
    for (const id of [...this.pending.keys()]) void this.send(id, true);
  }

  private async send(id: string, keepalive: boolean): Promise<void> {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.clearTimer(entry.timer);
    this.pending.delete(id);
    this.changed();
    try {
      await this.options.remove(id, { keepalive });
      this.options.onDeleted?.(id);
    } catch (error) {
      this.options.onError?.(id, error as Error);
    }
  }

  private changed(): void {
    this.options.onChange?.(this.list());
  }
}
