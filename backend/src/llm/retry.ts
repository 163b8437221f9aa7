import { ModelError } from '../errors.ts';
import { sleep } from '../util/abort.ts';

export interface RetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
  /** Longest single wait, whatever the server's retry-after says. */
  maxDelayMs: number;
}

/**
 * Runs `attempt` until it succeeds, fails with a non-retryable error, or runs out of retries.
 * Waits grow exponentially with full jitter; a server's retry-after wins when it is given.
 */
export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  signal: AbortSignal,
  onRetry?: (error: ModelError, delayMs: number, attemptNumber: number) => void,
): Promise<T> {
  for (let attemptNumber = 0; ; attemptNumber++) {
    try {
      return await attempt(attemptNumber);
    } catch (error) {
      if (signal.aborted || !(error instanceof ModelError) || !error.retryable || attemptNumber >= policy.maxRetries) {
        throw error;
      }
      const backoff = Math.random() * policy.baseDelayMs * 2 ** attemptNumber;
      const delayMs = Math.min(policy.maxDelayMs, error.retryAfterMs ?? backoff);
      onRetry?.(error, delayMs, attemptNumber + 1);
      await sleep(delayMs, signal);
    }
  }
}
