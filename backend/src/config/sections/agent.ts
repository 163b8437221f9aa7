import { STEER_MAX_CHARS_DEFAULT } from '@stepwise/shared-types';
import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import type { ApprovalRule } from '../approval-rules.ts';
import { integer, section } from '../env-values.ts';

/** The iterations a run takes when neither it nor AGENT_MAX_STEPS says (lowered to AGENT_MAX_STEPS_LIMIT). */
const DEFAULT_MAX_STEPS = 10;

/** A run's budgets, what an unanswered question or approval does, and the messages sent to a running run. */
export const agentSection = section(
  z.object({
    AGENT_MAX_STEPS: integer(1).optional(),
    AGENT_MAX_STEPS_LIMIT: integer(1).default(50),
    AGENT_INPUT_TIMEOUT_MS: integer(1).default(300_000),
    AGENT_RUN_TIMEOUT_MS: integer(1).default(15 * 60_000),
    AGENT_RUN_TOKEN_BUDGET: integer(0).default(0),
    AGENT_RUN_COST_BUDGET_USD: z
      .string()
      .trim()
      .transform(Number)
      .pipe(z.number({ error: 'must be a number of USD' }).positive('must be more than 0'))
      .optional(),
    INPUT_TIMEOUT_ACTION: z.enum(['park', 'stop']).default('park'),
    APPROVAL_TIMEOUT_ACTION: z.enum(['park', 'stop', 'deny']).default('park'),
    CONTEXT_BUDGET_CHARS: integer(1000).default(60_000),
    STEER_QUEUE_MAX: integer(1).default(10),
    STEER_MAX_CHARS: integer(1).default(STEER_MAX_CHARS_DEFAULT),
  }),
  (env) => {
    if (env.AGENT_MAX_STEPS !== undefined && env.AGENT_MAX_STEPS > env.AGENT_MAX_STEPS_LIMIT) {
      throw new ConfigError(`Invalid AGENT_MAX_STEPS: ${env.AGENT_MAX_STEPS} is above AGENT_MAX_STEPS_LIMIT (${env.AGENT_MAX_STEPS_LIMIT})`);
    }
    // The config file's rules (config-file.ts) are read after the environment and put in here.
    const approval: ApprovalRule[] = [];
    return {
      agent: {
        // The built-in default yields to a lower limit; an explicit default above it is an error (above).
        maxStepsDefault: env.AGENT_MAX_STEPS ?? Math.min(DEFAULT_MAX_STEPS, env.AGENT_MAX_STEPS_LIMIT),
        maxStepsLimit: env.AGENT_MAX_STEPS_LIMIT,
        inputTimeoutMs: env.AGENT_INPUT_TIMEOUT_MS,
        /** A run's wall-clock budget. */
        runTimeoutMs: env.AGENT_RUN_TIMEOUT_MS,
        /** A run's token budget (prompt + completion, as the model reports them); 0: none. */
        runTokenBudget: env.AGENT_RUN_TOKEN_BUDGET,
        /** A run's default cost budget in USD (a chat's `max_cost_usd` overrides it); undefined: none. */
        runCostBudgetUsd: env.AGENT_RUN_COST_BUDGET_USD,
        /** What a question nobody answered in time does: park the run until someone does, or stop it. */
        inputTimeoutAction: env.INPUT_TIMEOUT_ACTION,
        /** What an approval nobody answered in time does: park the run, stop it, or deny the call (the run goes on). */
        approvalTimeoutAction: env.APPROVAL_TIMEOUT_ACTION,
        /** The config file's "approval" rules: tool name or glob → auto / ask / deny, first match wins. */
        approval,
        /** How much earlier conversation (in characters) goes to the model; oldest turns go first. */
        contextBudgetChars: env.CONTEXT_BUDGET_CHARS,
        /** How many messages sent during runs may wait in one chat (steers and queued messages). */
        steerQueueMax: env.STEER_QUEUE_MAX,
        /** The longest message a person may send to a running run, in characters. */
        steerMaxChars: env.STEER_MAX_CHARS,
      },
    };
  },
);
