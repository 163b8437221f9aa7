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

/** What becomes of a run a durable engine executes here that no socket started here: set up, or closed. */
export type Adoption = 'resumed' | 'closed';

/**
 * An engine whose runs outlive this process (Restate): it executes them again by itself after a
 * restart or on another instance, so the sessions hand runs over on shutdown rather than ending
 * them, and set up here a run the engine executes here that no socket started here.
 */
export interface DurableRunEngine extends RunEngine {
  readonly durable: true;
  /** Serves the runs (and registers with the engine); called at startup, before runs are recovered. */
  start(): Promise<void>;
  close(): Promise<void>;
  /** Who sets up a run the engine executes here that no socket started here. */
  onAdopt(adopt: (sessionId: string, runId: string) => Promise<Adoption>): void;
  /** Starts (or finds) a run's durable execution; `finished` when it has ended already. */
  submit(runId: string, sessionId: string): Promise<{ finished: boolean }>;
  /** Shutting down: no execution starts here any more. */
  drain(): void;
  /** Whether the engine answers, for the health endpoint. */
  health(): Promise<Record<string, boolean>>;
}

export function isDurable(engine: RunEngine): engine is DurableRunEngine {
  return (engine as Partial<DurableRunEngine>).durable === true;
}

/** The default: the run executes in this process, journaled into the store. */
export class InProcessEngine implements RunEngine {
  constructor(private readonly kernel: RunKernel) {}

  execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome> {
    return this.kernel.execute(input, session, hooks);
  }
}
