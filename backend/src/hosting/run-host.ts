import { type ControlBus, InProcessControlBus } from '../agent/kernel/control-bus.ts';
import { InProcessFanOut, type LogFanOut } from './log-fan-out.ts';
import { InProcessRouter, type RunRouter } from './run-router.ts';
import { InProcessLease, type SessionLease } from './session-lease.ts';

/**
 * A run that arrives here without a socket having started it here: its instance went away (its
 * lease ran out, this instance now holds it), or the durable engine executes it here after a
 * restart. The arrival handler sets it up from the store and says what became of it.
 */
export interface ArrivingRun {
  sessionId: string;
  runId: string;
}

/** What became of an arriving run: set up here to go on, or closed (it had ended, or cannot go on). */
export type Arrival = 'resumed' | 'closed';

/**
 * What to do, at startup, with a run the store says was going when its process stopped: go on with
 * it here, close it (its durable execution ended, its end unsaved), or leave it to the live
 * instance that holds it.
 */
export type Interrupted = 'go_on' | 'close' | 'elsewhere';

/** What becomes of the runs here when this process shuts down: they are handed over (they go on elsewhere, or later), or stopped. */
export type AtShutdown = 'hand_over' | 'stop';

/**
 * Where runs live, over a process's life: runs that arrive here, runs found going at startup,
 * leases lost to another instance, what the shared dependencies say, and what a shutdown does.
 * One process; several instances (PostgreSQL leases, Redis); runs in Restate workflows.
 */
export interface RunHost {
  /** This instance's name among several. */
  readonly instanceId: string | undefined;
  /** `handler` sets up each run that arrives here without a socket (see ArrivingRun); a throw means "not yet", tried again. */
  onRunArrived(handler: (run: ArrivingRun) => Promise<Arrival>): void;
  /** At startup: what becomes of a run its process left going (see Interrupted). */
  interrupted(run: ArrivingRun): Promise<Interrupted>;
  /** `handler` is called when another instance took a session this one held: its run must stop here. */
  onLostLease(handler: (sessionId: string) => void): void;
  /** Which shared dependencies answer now (none in one process). */
  health(): Promise<Record<string, boolean>>;
  start(): Promise<void>;
  /** Shutting down: no run starts executing here any more. Says whether the runs here are handed over or stopped. */
  drain(): AtShutdown;
  close(): Promise<void>;
}

/** Where a session's run lives and how to reach it, as the narrow ports an adapter offers them. */
export interface Hosting {
  host: RunHost;
  lease: SessionLease;
  router: RunRouter;
  fanOut: LogFanOut;
  /** Where the runs executing here take their commands. */
  controlBus: ControlBus;
  /** Whether other instances write sessions' logs too: a claim catches the log up first. */
  shared: boolean;
}

/** One process: every session is here, every run started here; nothing arrives, nothing is handed over. */
export class InProcessRunHost implements RunHost {
  readonly instanceId = undefined;

  onRunArrived(): void {}
  onLostLease(): void {}

  async interrupted(): Promise<Interrupted> {
    return 'go_on';
  }

  async health(): Promise<Record<string, boolean>> {
    return {};
  }

  async start(): Promise<void> {}

  /** One process: its runs stop with it. */
  drain(): AtShutdown {
    return 'stop';
  }

  async close(): Promise<void> {}
}

/** The ports of one process. */
export function inProcessHosting(controlBus: ControlBus = new InProcessControlBus()): Hosting {
  const lease = new InProcessLease();
  return { host: new InProcessRunHost(), lease, router: new InProcessRouter(lease, controlBus), fanOut: new InProcessFanOut(), controlBus, shared: false };
}
