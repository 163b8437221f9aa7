import type { RunHooks, RunKernel, RunOutcome, RunSession } from './run-kernel.ts';
import type { RunInput } from './strategy.ts';

/**
 * Where runs execute. The in-process engine runs them here with the store's journal; Restate runs
 * each as a workflow that outlives this process, with its own journal (restate/; its run host says
 * how such runs arrive and are handed over). Either way the kernel runs the strategy, so every
 * strategy runs on every engine.
 */
export interface RunEngine {
  /** Runs `input` to its one ending. Never rejects. */
  execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome>;
}

/** The default: the run executes in this process, journaled into the store. */
export class InProcessEngine implements RunEngine {
  constructor(private readonly kernel: RunKernel) {}

  execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome> {
    return this.kernel.execute(input, session, hooks);
  }
}
