import { createContext, useContext } from 'react';

/** A person's decision on a tool call that waits for approval. */
export interface ApprovalDecision {
  decision: 'approve' | 'deny';
  arguments?: Record<string, unknown>;
  reason?: string;
  remember?: 'run';
}

/** Sends a decision for the approval `questionId`; false when it could not be sent. */
export type Approve = (questionId: string, decision: ApprovalDecision) => boolean;

export const ApprovalContext = createContext<Approve | undefined>(undefined);

export function useApprove(): Approve | undefined {
  return useContext(ApprovalContext);
}
