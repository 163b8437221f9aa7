import type { ApprovalDecision } from '@stepwise/shared-types';
import { createContext, useContext } from 'react';

/** Sends a person's decision (shared-types' ApprovalDecision) for the approval `questionId`; false when it could not be sent. */
export type Approve = (questionId: string, decision: ApprovalDecision) => boolean;

export const ApprovalContext = createContext<Approve | undefined>(undefined);

export function useApprove(): Approve | undefined {
  return useContext(ApprovalContext);
}
