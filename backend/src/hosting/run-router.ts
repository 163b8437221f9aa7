import type { PersonAnswer } from '@stepwise/shared-types';
import { type ControlBus, type ControlCommand, type ControlOutcome, noOutcome } from '../agent/kernel/control-bus.ts';
import type { InProcessLease } from './session-lease.ts';

/** How a command reaches a session's run, wherever it executes (this process, another instance, a durable workflow). */
export interface RunRouter {
  /** A command for the session's run, wherever it executes; the "nothing to do" outcome when none runs. */
  sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome>;
  /**
   * Keeps an answer to a question of a run that is not executing anywhere just now (its process
   * restarting): the run takes it when it asks again. False when nothing keeps it, or the question
   * had its answer already (the first one stands).
   */
  keepAnswer(runId: string, questionId: string, answer: PersonAnswer): Promise<boolean>;
}

/** One process: commands reach the run that holds the session through the process's control bus. */
export class InProcessRouter implements RunRouter {
  constructor(
    private readonly lease: InProcessLease,
    private readonly bus: ControlBus,
  ) {}

  async sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    const runId = this.lease.runOf(sessionId);
    return runId ? this.bus.send(runId, command) : noOutcome(command);
  }

  /** Nothing keeps an answer in one process: a run that is not here is not anywhere. */
  async keepAnswer(): Promise<boolean> {
    return false;
  }
}
