import type { ApprovalDecision, PersonAnswer } from '@stepwise/shared-types';
import type { ApprovalPolicy, ApprovalRule } from '../config/approval-rules.ts';

/** A tool's own view of whether its call needs a person: built-ins by what they do, MCP tools by their annotations. */
export type ApprovalHint = (args: Record<string, unknown>) => 'auto' | 'ask';

function matches(pattern: string, name: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`);
  return regex.test(name);
}

/**
 * The policy of one call. The config file's rules come first (a `deny` there is pinned: no chat
 * can lift it); then the run's own choice (`chat.tool_approval`); then the tool's hint (built-in
 * read-only tools run, `write_file` and notepad appends ask, MCP tools ask unless read-only).
 */
export function policyOf(
  tool: string,
  args: Record<string, unknown>,
  sources: { rules: readonly ApprovalRule[]; run?: Readonly<Record<string, ApprovalPolicy>> | undefined; hint?: ApprovalHint | undefined },
): ApprovalPolicy {
  const rule = sources.rules.find((candidate) => matches(candidate.pattern, tool));
  if (rule?.policy === 'deny') return 'deny';
  const chosen = sources.run?.[tool];
  if (chosen) return chosen;
  if (rule) return rule.policy;
  return sources.hint?.(args) ?? 'auto';
}

/** The policy a tool has before any call (for the tool picker and Settings): its hint with no arguments, under the rules. */
export function listedPolicy(tool: string, rules: readonly ApprovalRule[], hint: ApprovalHint | undefined): ApprovalPolicy {
  return policyOf(tool, {}, { rules, hint });
}

/** The two answers an approval offers as buttons. */
export const APPROVAL_CHOICES = ['Approve', 'Deny'] as const;

/**
 * Reads an answer to an approval: its decision (what `agent_user_input.approval` carries), the
 * words of its buttons ("Approve" / "Deny", any case; "yes" / "no"), or a denial in words with its
 * reason ("deny: not now", as a text-only client sends it). Undefined when it is none of these.
 */
export function readApproval(answer: PersonAnswer): ApprovalDecision | undefined {
  if (answer.kind === 'approval') return answer.approval;
  const word = answer.text.trim().toLowerCase();
  if (word === 'approve' || word === 'yes') return { decision: 'approve' };
  if (word === 'deny' || word === 'no') return { decision: 'deny' };
  const denial = /^(?:deny|no)\b[\s:,.-]+(\S[\s\S]*)$/i.exec(answer.text.trim());
  if (denial) return { decision: 'deny', reason: denial[1]!.trim().slice(0, 2_000) };
  return undefined;
}
