/** How many answers and runs the server works on at once; beyond it, new ones get `server_busy`. */
export class RunSlots {
  private used = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes a slot; returns its release function, or undefined when all are taken. */
  tryAcquire(): (() => void) | undefined {
    if (this.used >= this.limit) return undefined;
    this.used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used--;
    };
  }
}
