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

/**
 * One bucket per user, shared by all of that user's sockets on this instance; a bucket is let go
 * once it would be full again (the user has been quiet for a second), so the map stays small.
 */
export class RateLimiters {
  private readonly buckets = new Map<string, { limiter: RateLimiter; lastUsed: number }>();

  constructor(
    private readonly ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  take(key: string): boolean {
    const now = this.now();
    if (this.buckets.size > 1000) {
      for (const [other, bucket] of this.buckets) if (now - bucket.lastUsed > 1000) this.buckets.delete(other);
    }
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { limiter: new RateLimiter(this.ratePerSecond, this.now), lastUsed: now };
      this.buckets.set(key, bucket);
    }
    bucket.lastUsed = now;
    return bucket.limiter.take();
  }
}
