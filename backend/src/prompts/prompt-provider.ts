/** Variables of the reason prompt: plan the step. */
export interface ReasonPromptVariables {
  question: string;
  files_manifest: string;
  last_observation: string;
  step: number;
  max_steps: number;
  tool_names: string[];
}

/** Variables of the act prompt: call tools for the plan. */
export interface ActPromptVariables {
  question: string;
  plan: string;
  step: number;
  max_steps: number;
  tool_names: string[];
}

/** Variables of the observe prompt: judge this step's results. */
export interface ObservePromptVariables {
  question: string;
  tool_summaries: string;
  /** The tools this run may use, so the model can say when a needed one is not enabled. */
  tool_names: string[];
  step: number;
  max_steps: number;
  is_last_step: boolean;
}

/** Variables of the system prompt of every conversation. */
export interface ChatSystemPromptVariables {
  today: string;
}

export interface PromptVariables {
  reason: ReasonPromptVariables;
  act: ActPromptVariables;
  observe: ObservePromptVariables;
  chatSystem: ChatSystemPromptVariables;
}
export type PromptName = keyof PromptVariables;

/** Renders the prompt templates; every template is compiled and checked once, at startup. */
export interface PromptProvider {
  render<K extends PromptName>(name: K, variables: PromptVariables[K]): string;
}
