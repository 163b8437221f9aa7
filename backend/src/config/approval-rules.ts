import { z } from 'zod';
import { ConfigError } from '../errors.ts';

/** What happens when a run calls a tool: it runs, a person approves it first, or it never runs. */
export const ApprovalPolicy = z.enum(['auto', 'ask', 'deny']);
export type ApprovalPolicy = z.infer<typeof ApprovalPolicy>;

/** The rules of the config file (`"approval": {"files__*": "ask"}`), first match wins; a glob's `*` matches any run of characters. */
export interface ApprovalRule {
  pattern: string;
  policy: ApprovalPolicy;
}

/** A glob over tool names: `files__*`, `calculator`. */
export const TOOL_GLOB = /^[A-Za-z0-9_.*-]{1,200}$/;

/** An `approval` object as the config file and the app settings write it: a policy per tool name or glob. */
export const ApprovalEntries = z.record(z.string().regex(TOOL_GLOB, 'a tool glob holds letters, digits, ".", "_", "-" and "*"'), ApprovalPolicy);

/** Parses the config file's `approval` object, in its order; throws a ConfigError saying what is wrong, `where` naming the file. */
export function parseApprovalRules(value: unknown, where: string): ApprovalRule[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`Invalid "approval" in ${where}: must be an object of tool names or globs, e.g. {"files__*": "ask", "everything__echo": "auto"}`);
  }
  return Object.entries(value).map(([pattern, policy]) => {
    if (!TOOL_GLOB.test(pattern)) throw new ConfigError(`Invalid approval."${pattern}" in ${where}: a tool glob holds letters, digits, ".", "_", "-" and "*"`);
    const parsed = ApprovalPolicy.safeParse(policy);
    if (!parsed.success) throw new ConfigError(`Invalid approval."${pattern}" in ${where}: must be "auto", "ask" or "deny"`);
    return { pattern, policy: parsed.data };
  });
}
