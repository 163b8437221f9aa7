import type { By, PersonAnswer, StopReason } from '@stepwise/shared-types';
import type { InputOutcome } from './agent-control.ts';
import type { Steer } from './steering.ts';

/** A command to a run, wherever it executes. Resume and snapshot commands join this union. */
export type ControlCommand =
  /** With `nodeId`: that branch alone (a research task, a plan step); the rest of the run goes on. */
  | { type: 'stop'; reason: StopReason; by?: By | undefined; nodeId?: string | undefined }
  /** Runs a branch a person stopped alone again, while the run goes on. */
  | { type: 'resume_branch'; nodeId: string; by?: By | undefined }
  | { type: 'answer'; answer: PersonAnswer; questionId?: string | undefined; by?: By | undefined }
  /** A person's message for the run to read at its next boundary (stored already). */
  | { type: 'steer'; steer: Steer }
  /** Withdraws a message the run has not read yet. */
  | { type: 'cancel'; messageId: string };

/** What became of a command. */
export type ControlOutcome =
  | { type: 'stop'; outcome: 'stopping' | 'no_active_run' | 'unknown_node' }
  | { type: 'resume_branch'; outcome: 'resuming' | 'no_active_run' | 'unknown_node' }
  | { type: 'answer'; outcome: InputOutcome; message?: string }
  /** `waiting`: the run will read it; `read`: it read it already; `no_active_run`: no run took it (it reads it when it goes on). */
  | { type: 'steer'; outcome: 'waiting' | 'read' | 'no_active_run' }
  /** `cancelled`: withdrawn before the run read it; `read`: too late; `unknown` / `no_active_run`: the run does not hold it (it may be withdrawn in the store). */
  | { type: 'cancel'; outcome: 'cancelled' | 'read' | 'unknown' | 'no_active_run' };

/** A run's side of the channel: it handles the commands sent to it. */
export type ControlHandler = (command: ControlCommand) => ControlOutcome;

/**
 * The typed control channel of runs: stop, answer by question id. In-process by default; an
 * adapter across instances (Redis) implements the same port, so the core never changes for it.
 */
export interface ControlBus {
  /** Routes commands for `runId` to `handler` until the returned function is called. */
  attach(runId: string, handler: ControlHandler): () => void;
  /** Delivers a command to the run; a run nobody handles answers as having none active or pending. */
  send(runId: string, command: ControlCommand): Promise<ControlOutcome>;
}

/** The control bus of one process. */
export class InProcessControlBus implements ControlBus {
  private readonly handlers = new Map<string, ControlHandler>();

  attach(runId: string, handler: ControlHandler): () => void {
    this.handlers.set(runId, handler);
    return () => {
      if (this.handlers.get(runId) === handler) this.handlers.delete(runId);
    };
  }

  async send(runId: string, command: ControlCommand): Promise<ControlOutcome> {
    const handler = this.handlers.get(runId);
    if (handler) return handler(command);
    return noOutcome(command);
  }
}

/** What a command answers when no run takes it: nothing to stop, nobody waiting for an answer. */
export function noOutcome(command: ControlCommand): ControlOutcome {
  switch (command.type) {
    case 'stop':
    case 'resume_branch':
    case 'steer':
    case 'cancel':
      return { type: command.type, outcome: 'no_active_run' };
    case 'answer':
      return { type: 'answer', outcome: 'no_pending_input' };
    default: {
      const unexpected: never = command;
      throw new Error(`Unknown control command ${JSON.stringify(unexpected)}`);
    }
  }
}
