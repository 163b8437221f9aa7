import {
  AgentControl,
  type AnyStrategy,
  calculatorTool,
  configFromEnv,
  createCurrentTimeTool,
  HandlebarsPromptProvider,
  type LlmClient,
  type Logger,
  type RunCheckpoint,
  type RunInput,
  RunKernel,
  type RunOutcome,
  type Tool,
  ToolRegistry,
} from '@stepwise/backend';
import { ArraySink } from './array-sink.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

/**
 * The run kernel in process, for unit tests of a strategy: the repository's prompts, the built-in
 * calculator and clock, a silent logger, and the model you give it. `start` runs one request and
 * hands back its sink, its control and the outcome's promise.
 */
export function inProcessKernel(llm: LlmClient, strategies: AnyStrategy[], env: Record<string, string> = {}) {
  const config = configFromEnv({ AGENT_INPUT_TIMEOUT_MS: '60000', ...env });
  const tools = new ToolRegistry(config, [calculatorTool as Tool, createCurrentTimeTool() as Tool]);
  const kernel = new RunKernel(strategies, llm, tools, new HandlebarsPromptProvider(config), config, silent);
  let runs = 0;
  return {
    kernel,
    start(
      question: string,
      options: { strategy?: string; maxSteps?: number; toolNames?: string[]; strategyOptions?: Record<string, unknown>; resume?: unknown } = {},
    ) {
      const strategy = options.strategy ?? strategies[0]!.name;
      const checked = kernel.checkOptions(strategy, options.strategyOptions);
      if (!checked.ok) throw new Error(checked.message);
      const input: RunInput = {
        runId: `run-${++runs}`,
        sessionId: 'session-1',
        strategy,
        question,
        history: [],
        maxSteps: options.maxSteps ?? 5,
        toolNames: options.toolNames ?? ['calculator', 'current_time'],
        options: checked.options,
      };
      const sink = new ArraySink();
      const control = new AgentControl();
      const checkpoints: Array<RunCheckpoint | null> = [];
      const outcome: Promise<RunOutcome> = kernel.execute(
        input,
        { control, sink, filesManifest: async () => '' },
        { resume: options.resume, saveCheckpoint: async (checkpoint) => void checkpoints.push(checkpoint) },
      );
      return { input, sink, control, outcome, checkpoints };
    },
  };
}
