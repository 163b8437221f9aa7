import type { DeltaEvent } from '@stepwise/shared-types';

/**
 * What a follower of a session hears: another instance appended to its log, or streamed a preview;
 * or it is time to look at the log anyway (a notice may have been lost on its way).
 */
export type SessionNotice = { kind: 'appended' } | { kind: 'preview'; delta: DeltaEvent; afterSeq: number } | { kind: 'look' };

export type SessionListener = (notice: SessionNotice) => void;

/** How the instances that share sessions hear of each other's writes to a session's log. */
export interface LogFanOut {
  /** Calls `listener` when another instance writes the session's log (and now and then to look anyway); resolves with the unsubscribe. */
  follow(sessionId: string, listener: SessionListener): Promise<() => void>;
  /** Tells the other instances that the session's log grew. */
  notify(sessionId: string): void;
  /** Passes a streaming preview on to the instances whose clients follow the session. */
  publishPreview(sessionId: string, delta: DeltaEvent, afterSeq: number): void;
}

/** One process: nobody else writes a session's log, so there is nothing to hear or to tell. */
export class InProcessFanOut implements LogFanOut {
  async follow(): Promise<() => void> {
    return () => undefined;
  }

  notify(): void {}
  publishPreview(): void {}
}
