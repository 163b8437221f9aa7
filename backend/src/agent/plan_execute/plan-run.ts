import { z } from 'zod';
import type { LlmMessage } from '../../messages.ts';
import { type PersonMessage, personTurns } from '../common/person-messages.ts';
import { questionTurn, type Run } from '../kernel/strategy.ts';
import type { StepState } from './plan.ts';

const tools = ['calculator'];
/** The templates in prompts/plan_execute/, each with an example of its variables. */
export const prompts = {
  plan: { question: 'q', tool_names: tools, files_manifest: '', notepad: '' },
  replan: {
    question: 'q',
    tool_names: tools,
    files_manifest: '',
    notepad: '',
    plan_status: '',
    observations: '',
    trigger: 'failed_attempts',
    reason: '',
    messages: '',
  },
  viability: { question: 'q', plan_status: '', observation: '' },
  reason: {
    question: 'q',
    goal: 'g',
    success_criteria: '',
    context: '',
    plan_status: '',
    observations: '',
    tool_names: tools,
    files_manifest: '',
    attempt: 1,
    max_attempts: 3,
  },
  act: { question: 'q', goal: 'g', context: '', plan: '', tool_names: tools, files_manifest: '' },
  observe: { question: 'q', goal: 'g', success_criteria: '', context: '', tool_summaries: '', attempt: 1, max_attempts: 3 },
  synthesis: { question: 'q', steps_report: '', notes: '', steps: [{ index: 1, goal: 'g', status: 'done', observation: '' }] },
};

export const Options = z
  .object({
    max_step_attempts: z.number().int().min(1).max(10).default(3),
    replan: z.boolean().default(true),
  })
  .strict();
export type Options = z.infer<typeof Options>;
export type PlanRun = Run<Options, typeof prompts>;

/** What the run keeps across its steps. */
export interface State {
  steps: StepState[];
  revision: number;
  replans: number;
  /** Executor iterations so far, run-wide: the run's iteration budget counts these. */
  iterations: number;
  notes: string[];
  /** The messages the person sent the run as a whole, as the run read them: every later call reads them too. */
  heard: PersonMessage[];
}

/** How many earlier observations each executor call is told. */
const RECENT_OBSERVATIONS = 5;

export function recentObservations(state: State): string {
  return state.steps
    .filter((step) => step.observation)
    .slice(-RECENT_OBSERVATIONS)
    .map((step) => `Step ${step.index}: ${step.observation}`)
    .join('\n');
}

/**
 * A call's messages: its instructions, the session so far, the question, the messages the person
 * sent the run as a whole (as read so far), then the step's own messages.
 */
export function conversation(system: string, run: PlanRun, heard: readonly PersonMessage[], extra: LlmMessage[]): LlmMessage[] {
  return [{ role: 'system', content: system }, ...run.input.history, questionTurn(run), ...personTurns(heard), ...extra];
}
