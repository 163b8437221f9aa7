import type { PlanStepStatus } from '@stepwise/shared-types';
import { z } from 'zod';
import { ModelError } from '../../errors.ts';

const PlanStep = z.object({
  goal: z.string().min(1),
  primary_tools: z.array(z.string()),
  success_criteria: z.string(),
  context: z.string(),
});

/** The plan the model answers with (schema `plan` on the wire). */
export const PlanSchema = z.object({
  // At least one step, on the wire (minItems) as in the check: an empty first plan is asked for again.
  steps: z.array(PlanStep).min(1),
});
/** A re-plan (schema `plan` too): the steps left to do, which may be none ("nothing left"). */
export const ReplanSchema = z.object({ steps: z.array(PlanStep) });
export type PlanReply = z.infer<typeof PlanSchema>;

/** The viability check's answer (schema `plan_viability`). */
export const ViabilitySchema = z.object({ viable: z.boolean(), confidence: z.number(), reason: z.string() });
export type Viability = z.infer<typeof ViabilitySchema>;

/** The executor's observe control block. */
export const StepObserveControl = z.object({ observation: z.string().optional(), step_complete: z.boolean().optional() });

/** At most this many steps are taken from one plan; the rest are left out with a warning. */
export const MAX_PLAN_STEPS = 8;
/** Re-plans a run may make; after that the run goes on with the plan it has and says so. */
export const MAX_REPLANS = 3;
/** A not-viable verdict re-plans only when the model is at least this sure. */
export const VIABILITY_THRESHOLD = 0.7;

/**
 * Words in a step's observation that say the plan lacks something: a missing prerequisite or a new
 * requirement. The one list the missing_prerequisite trigger reads.
 */
export const MISSING_PREREQUISITE_KEYWORDS = [
  'missing',
  'prerequisite',
  'not found',
  'no such file',
  'does not exist',
  "doesn't exist",
  'not available',
  'first need',
  'need to first',
  'requires',
  'new requirement',
  'depends on',
] as const;

export function namesMissingPrerequisite(observation: string): boolean {
  const text = observation.toLowerCase();
  return MISSING_PREREQUISITE_KEYWORDS.some((keyword) => text.includes(keyword));
}

/** One step of the run's plan, with what executing it found. */
export interface StepState {
  index: number;
  goal: string;
  tools: string[];
  successCriteria: string;
  context: string;
  status: PlanStepStatus;
  attempts: number;
  observation: string;
  toolsUsed: string[];
  /** Tool calls made while executing the step. */
  toolCalls: number;
}

/** How much of a reply an error quotes. */
const QUOTE_CHARS = 300;

export function quoteStart(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > QUOTE_CHARS ? `${trimmed.slice(0, QUOTE_CHARS)}…` : trimmed;
}

/**
 * Checks a plan and makes its steps: every goal non-empty (else the plan is refused, quoting it);
 * tools the run does not have are dropped from a step's primary tools with a note in its context.
 * Steps are numbered from `firstIndex`.
 */
export function planSteps(
  reply: PlanReply,
  enabled: readonly string[],
  firstIndex: number,
  { replan = false }: { replan?: boolean } = {},
): { steps: StepState[]; notes: string[] } {
  // A first plan has a step at least (its schema asks for one, and the endpoint is asked again without one); a re-plan may leave nothing to do.
  if (reply.steps.length === 0 && !replan) throw new ModelError("The model's plan has no step, so nothing could be done");
  const bad = reply.steps.findIndex((step) => step.goal.trim() === '');
  if (bad !== -1) {
    throw new ModelError(`The model's plan is not valid (step ${bad + 1} has no goal): "${quoteStart(JSON.stringify(reply))}"`);
  }
  const known = new Set([...enabled, 'request_input']);
  const notes: string[] = [];
  if (reply.steps.length > MAX_PLAN_STEPS) notes.push(`The plan had ${reply.steps.length} steps; only the first ${MAX_PLAN_STEPS} are kept.`);
  const steps = reply.steps.slice(0, MAX_PLAN_STEPS).map((step, at): StepState => {
    const unknown = step.primary_tools.filter((tool) => !known.has(tool));
    const index = firstIndex + at;
    if (unknown.length) notes.push(`Step ${index}: ${unknown.join(', ')} dropped (not a tool of this run).`);
    const note = unknown.length ? ` (Not available and dropped: ${unknown.join(', ')}.)` : '';
    return {
      index,
      goal: step.goal.trim(),
      tools: [...new Set(step.primary_tools.filter((tool) => known.has(tool)))],
      successCriteria: step.success_criteria.trim(),
      context: `${step.context.trim()}${note}`.trim(),
      status: 'pending',
      attempts: 0,
      observation: '',
      toolsUsed: [],
      toolCalls: 0,
    };
  });
  return { steps, notes };
}

/** The plan with each step's status, one line a step, for prompts. */
export function planStatus(steps: readonly StepState[]): string {
  return steps.map((step) => `${step.index}. [${step.status}] ${step.goal}${step.observation ? ` — ${step.observation}` : ''}`).join('\n');
}
