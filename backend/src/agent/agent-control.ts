import type { StopReason } from '@stepwise/shared-types';
import { InputTimeoutError } from '../errors.ts';
import { abortReason } from '../util/abort.ts';

interface Waiter {
  resolve: (answer: string) => void;
}

/**
 * The controls of one active run: a stop signal that every model call, tool and wait receives,
 * and the queue through which the user's answers reach a waiting `request_input`.
 */
export class AgentControl {
  private readonly controller = new AbortController();
  private readonly waiters: Waiter[] = [];
  private reason: StopReason | undefined;

  /** Aborts when the run is stopped. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the run was stopped, once it was. */
  get stopReason(): StopReason | undefined {
    return this.reason;
  }

  /** True while the run waits for the user's answer. */
  get awaitingInput(): boolean {
    return this.waiters.length > 0;
  }

  /** Stops the run: aborts in-flight model calls, tools and waits at once. Later calls change nothing. */
  stop(reason: StopReason = 'user'): void {
    if (this.controller.signal.aborted) return;
    this.reason = reason;
    const error = new Error(`Run stopped (${reason})`);
    error.name = 'AbortError';
    this.controller.abort(error);
  }

  /** Throws the abort error if the run was stopped; loops call it between phases. */
  throwIfStopped(): void {
    if (this.controller.signal.aborted) throw abortReason(this.controller.signal);
  }

  /**
   * Resolves with the user's next answer. Rejects with InputTimeoutError after `timeoutMs`,
   * or with the abort error as soon as `signal` aborts.
   */
  waitForInput(timeoutMs: number, signal: AbortSignal = this.signal): Promise<string> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(abortReason(signal));
      const waiter: Waiter = {
        resolve: (answer) => {
          settle();
          resolve(answer);
        },
      };
      const onAbort = () => {
        settle();
        reject(abortReason(signal));
      };
      const timer = setTimeout(() => {
        settle();
        reject(new InputTimeoutError(timeoutMs));
      }, timeoutMs);
      const settle = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Hands the user's answer to the oldest waiting question; false when nothing is waiting. */
  provideInput(answer: string): boolean {
    const waiter = this.waiters[0];
    if (!waiter) return false;
    waiter.resolve(answer);
    return true;
  }
}
