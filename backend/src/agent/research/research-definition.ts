import { z } from 'zod';
import { ERROR_CODE, StepwiseError } from '../../errors.ts';
import type { Run } from '../kernel/strategy.ts';
import { AgentName, Verdict } from './state-doc.ts';

export const agentSample = {
  goal: 'g',
  constraints: [] as string[],
  stage: 's',
  task: 't',
  acceptance_criteria: [] as string[],
  best_answer: '',
  issues: [] as string[],
  results: '',
  tool_names: ['calculator'],
  files_manifest: '',
};

/** The templates in prompts/research/: the planner, one per agent, the verifiers and the report. */
export const prompts = {
  plan: { goal: 'g', files_manifest: '' },
  literature_scout: agentSample,
  paper_reader: agentSample,
  derivation_coder: agentSample,
  verifier: agentSample,
  orchestrator: agentSample,
  task_result: agentSample,
  task_verifier: agentSample,
  stage_verifier: { goal: 'g', stage: 's', criteria: [] as string[], results: '' },
  final_verifier: { goal: 'g', results: '', best_answer: '' },
  report: { goal: 'g', results: '', evidence: '' },
};

export const options = z
  .object({
    mode: z.enum(['run', 'step']).default('run').describe('run: cycle until an answer or a verifier blocks; step: one wave per message'),
    task_verification: z.boolean().default(false).describe('Check each task against its acceptance criteria'),
    max_parallel: z.number().int().min(1).max(8).default(4).describe('Most tasks of a wave running at once'),
  })
  .strict();

export type ResearchRun = Run<z.infer<typeof options>, typeof prompts>;

/** Schema `task_graph`: the plan of a new project. */
export const TaskGraphPlan = z.object({
  // A stage at least, each with a task at least, on the wire as in the graph's check: an empty graph is asked for again.
  stages: z
    .array(
      z.object({
        id: z.string().min(1),
        name: z.string(),
        verifier_criteria: z.array(z.string()),
        tasks: z
          .array(
            z.object({
              id: z.string().min(1),
              title: z.string().min(1),
              agent: AgentName,
              depends_on: z.array(z.string()),
              acceptance_criteria: z.array(z.string()),
              inputs: z.array(z.string()),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});

/** Schema `task_result`: what a task hands back. */
export const TaskResult = z.object({
  summary: z.string(),
  result: z.string(),
  evidence: z.array(z.object({ source: z.string(), location: z.string() })),
  artifacts: z.array(z.object({ name: z.string(), content: z.string() })),
});
export type TaskResult = z.infer<typeof TaskResult>;

/** Schema `verdict`: a verifier's judgement. */
export const VerdictResult = z.object({
  verdict: Verdict,
  issues: z.array(z.string()),
  follow_up_tasks: z.array(z.object({ title: z.string(), agent: AgentName, acceptance_criteria: z.array(z.string()) })),
});
export type VerdictResult = z.infer<typeof VerdictResult>;

/** Tool rounds a task may take before it must hand back its result. */
export const TASK_TOOL_ROUNDS = 6;

export const BEST_ANSWER_LINES = 200;

/** An edit of the state document the run cannot use: the run ends naming the line and the reason. */
export class StateDocError extends StepwiseError {
  constructor(message: string) {
    super(ERROR_CODE.invalidMessage, message);
  }
}
