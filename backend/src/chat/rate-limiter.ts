/** A token bucket: `ratePerSecond` messages a second on average, bursts up to the same number. */
export class RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = ratePerSecond;
    this.last = now();
  }

  /** Takes one token; false when the bucket is empty (the message must be refused). */
  take(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.ratePerSecond, this.tokens + ((now - this.last) / 1000) * this.ratePerSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
