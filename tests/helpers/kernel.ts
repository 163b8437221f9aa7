import {
  AgentControl,
  type AnyStrategy,
  calculatorTool,
  configFromEnv,
  createCurrentTimeTool,
  HandlebarsPromptProvider,
  type LlmClient,
  type Logger,
  type RunInput,
  type RunJournal,
  type RunPast,
  RunKernel,
  type RunOutcome,
  type Tool,
  ToolRegistry,
} from '@stepwise/backend';
import { ArraySink } from './array-sink.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

type Entry = Awaited<ReturnType<RunJournal['read']>>[number];

/** A journal in memory, by run. */
export class MemoryJournal implements RunJournal {
  readonly runs = new Map<string, Entry[]>();
  /** An entry is in memory before anything after it is emitted, as the store's commits with the events after it. */
  readonly commitsWithEvents = true;
  async read(runId: string): Promise<Entry[]> {
    return structuredClone((this.runs.get(runId) ?? []).filter(Boolean));
  }
  async append(runId: string, entry: Entry): Promise<void> {
    const entries = this.runs.get(runId) ?? [];
    entries[entry.position] = structuredClone(entry);
    this.runs.set(runId, entries);
  }
  async truncate(runId: string, fromPosition: number): Promise<void> {
    this.runs.get(runId)?.splice(fromPosition);
  }
}

/**
 * The run kernel in process, for unit tests of a strategy: the repository's prompts, the built-in
 * calculator and clock, a silent logger, and the model you give it. `start` runs one request and
 * hands back its sink, its control and the outcome's promise.
 */
export function inProcessKernel(llm: LlmClient, strategies: AnyStrategy[], env: Record<string, string> = {}) {
  const config = configFromEnv({ AGENT_INPUT_TIMEOUT_MS: '60000', ...env });
  const tools = new ToolRegistry(config, [calculatorTool as Tool, createCurrentTimeTool() as Tool]);
  const journal = new MemoryJournal();
  const kernel = new RunKernel(strategies, llm, tools, new HandlebarsPromptProvider(config), config, silent, journal);
  let runs = 0;
  return {
    kernel,
    journal,
    start(
      question: string,
      options: {
        strategy?: string;
        maxSteps?: number;
        toolNames?: string[];
        strategyOptions?: Record<string, unknown>;
        /** Go on from this past (another run's, or with `runId` its own). */
        past?: RunPast & { storedMessages: number };
        runId?: string;
        /** The session's files (name → text), shared across runs when passed in. */
        files?: Map<string, string>;
      } = {},
    ) {
      const strategy = options.strategy ?? strategies[0]!.name;
      const checked = kernel.checkOptions(strategy, options.strategyOptions);
      if (!checked.ok) throw new Error(checked.message);
      const input: RunInput = {
        runId: options.runId ?? `run-${++runs}`,
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
      const files = options.files ?? new Map<string, string>();
      const outcome: Promise<RunOutcome> = kernel.execute(
        input,
        {
          control,
          sink,
          filesManifest: async () => '',
          files: { read: async (name) => files.get(name), write: async (name, content) => void files.set(name, content) },
        },
        options.past ? { past: options.past } : {},
      );
      return { input, sink, control, outcome, files };
    },
  };
}
