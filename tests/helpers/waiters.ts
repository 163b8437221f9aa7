/** Waits for conditions that are asked again whenever `notify` is called (a message came, a request arrived). */
export class Waiters {
  private readonly checks = new Set<() => void>();

  /** Asks every waiting condition again. */
  notify(): void {
    for (const check of [...this.checks]) check();
  }

  /**
   * Resolves with what `find` returns once it returns something, asked now and at each notify;
   * rejects with what `find` throws, or with `timedOut()` after `timeoutMs`.
   */
  until<T>(find: () => T | undefined, timeoutMs: number, timedOut: () => Error): Promise<T> {
    return new Promise((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        this.checks.delete(check);
        outcome();
      };
      const check = () => {
        let found: T | undefined;
        try {
          found = find();
        } catch (error) {
          return settle(() => reject(error));
        }
        if (found !== undefined) settle(() => resolve(found));
      };
      const timer = setTimeout(() => settle(() => reject(timedOut())), timeoutMs);
      this.checks.add(check);
      check();
    });
  }
}
