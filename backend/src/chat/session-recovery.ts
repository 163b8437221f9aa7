import type { Admission } from '../hosting/run-admission.ts';
import type { RunRecord } from '../store/store.ts';
import type { RunStart } from './session-runs.ts';
import { unexpectedState } from './session-state.ts';

/** What recovering a run asks of its session. */
export interface RecoveringSession {
  readonly sessionId: string;
  /** The run going here now, if any. */
  activeRunId(): string | undefined;
  /** What the run goes on from (its input and journal), or undefined when it cannot go on. */
  recoverInput(run: RunRecord): Promise<Extract<RunStart, { kind: 'recovery' }> | undefined>;
  /** Closes the run unended (its ending logged, the session let go). */
  closeInterrupted(run: RunRecord): Promise<void>;
  /** Closes the run's record alone, when it could not begin. */
  closeRecord(run: RunRecord): Promise<void>;
  admit(run: RunRecord): Promise<Admission>;
  /** Begins the admitted run; false when something else became the session's meanwhile. */
  begin(run: RunRecord, admission: Admission & { kind: 'admitted' }, start: Extract<RunStart, { kind: 'recovery' }>): boolean;
}

/**
 * After a restart: a run the server was in the middle of goes on from its journal, or is closed
 * (no journal, RESUME_INTERRUPTED_RUNS off, its ending already logged). Two recoveries of one run
 * (at startup, and Restate executing it meanwhile) share one outcome.
 */
export class RunRecoveries {
  private readonly recovering = new Map<string, Promise<'resumed' | 'closed'>>();

  constructor(private readonly session: RecoveringSession) {}

  recover(run: RunRecord): Promise<'resumed' | 'closed'> {
    const recovering = this.recovering.get(run.id) ?? this.once(run).finally(() => this.recovering.delete(run.id));
    this.recovering.set(run.id, recovering);
    return recovering;
  }

  private async once(run: RunRecord): Promise<'resumed' | 'closed'> {
    const { session } = this;
    if (session.activeRunId() === run.id) return 'resumed';
    const found = session.activeRunId() ? undefined : await session.recoverInput(run);
    if (session.activeRunId() === run.id) return 'resumed';
    if (!found || session.activeRunId()) {
      await session.closeInterrupted(run);
      return 'closed';
    }
    // A run that was going before the restart is not refused for lack of a slot.
    const admission = await session.admit(run);
    switch (admission.kind) {
      case 'refused':
        // Held by another instance (or another run here): not this one's to go on with now; tried again later.
        throw new Error(`Session ${session.sessionId} is held elsewhere: ${admission.error.message}`);
      case 'admitted':
        if (!session.begin(run, admission, found)) {
          await session.closeRecord(run);
          return 'closed';
        }
        return 'resumed';
      default:
        return unexpectedState(admission);
    }
  }
}
