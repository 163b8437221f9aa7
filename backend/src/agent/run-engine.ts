import type { RunHooks, RunKernel, RunOutcome, RunSession } from './run-kernel.ts';
import type { RunInput } from './strategy.ts';

/**
 * Where runs execute. The in-process engine runs them here with the store's journal; a durable
 * engine (Restate) runs each as a workflow that outlives this process, with its own journal.
 * Either way the kernel runs the strategy, so every strategy runs on every engine.
 */
export interface RunEngine {
  /** Runs `input` to its one ending. Never rejects. */
  execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome>;
  /**
   * A durable engine keeps an answer to a question of a run that is not executing anywhere just
   * now (its process restarting): the run takes it when it asks again. Absent: answers need the run.
   * Resolves false when the question had its answer already (the first one stands).
   */
  recordAnswer?(runId: string, questionId: string, answer: string): Promise<boolean>;
}

/** The default: the run executes in this process, journaled into the store. */
export class InProcessEngine implements RunEngine {
  constructor(private readonly kernel: RunKernel) {}

  execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome> {
    return this.kernel.execute(input, session, hooks);
  }
}
