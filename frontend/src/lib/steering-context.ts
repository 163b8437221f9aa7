import { createContext, useContext } from 'react';
import type { PendingMessageView } from '../state/view-state.ts';

/**
 * What components deep in a run need to talk to it while it runs: the messages that wait, and how
 * to withdraw one, message one branch (a research task), stop it, or run it again.
 */
export interface SteeringApi {
  pending: PendingMessageView[];
  /** The run going on, whose are the waiting messages that name none. */
  activeRunId: string | undefined;
  /** True for an admin watching another person's chat: the messages show, the actions do not. */
  readOnly: boolean;
  /** Withdraws a waiting message (cancel_message); false when it could not be sent. */
  cancel(messageId: string): boolean;
  /** Sends a message to one branch of the running run, reaching it at its next model call. */
  messageBranch(nodeId: string, content: string): boolean;
  /** Stops one branch; the rest of the run goes on. */
  stopBranch(nodeId: string): boolean;
  /** Runs a stopped branch again, its completed calls kept. */
  resumeBranch(nodeId: string): boolean;
}

export const SteeringContext = createContext<SteeringApi | undefined>(undefined);

/** The waiting messages and the steering actions (absent on a shared page). */
export function useSteering(): SteeringApi | undefined {
  return useContext(SteeringContext);
}
