import type { PersonAnswer } from '@stepwise/shared-types';
import type { ControlCommand, ControlOutcome } from '../agent/kernel/control-bus.ts';
import type { RunRouter } from '../hosting/run-router.ts';
import type { Arrival, ArrivingRun, AtShutdown, Hosting, Interrupted, RunHost } from '../hosting/run-host.ts';
import type { RestateEngine } from './restate-engine.ts';

/**
 * RUN_ENGINE=restate: a run lives in its Restate workflow, which outlives this process. Sessions
 * are held, reached and followed as by the ports beneath (one process, or the cluster of
 * instances); what Restate changes is where a run goes on (after a restart, or on another
 * instance behind the same address, Restate invokes the workflow again and the run arrives
 * wherever it is served) and that an answer to a run executing nowhere just now is kept by its
 * workflow. So only those members are Restate's own: RestateRunHost and RestateRouter.
 */
export function restateHosting(base: Hosting, engine: RestateEngine): Hosting {
  return { ...base, host: new RestateRunHost(base.host, engine), router: new RestateRouter(base.router, engine) };
}

/** A shutdown hands runs over, a run found going at startup is submitted to Restate (and closed if its workflow ended), an orphaned lease is left to Restate. */
export class RestateRunHost implements RunHost {
  constructor(
    private readonly base: RunHost,
    private readonly engine: RestateEngine,
  ) {}

  get instanceId(): string | undefined {
    return this.base.instanceId;
  }

  /** Runs arrive when Restate executes their workflow here; an orphaned lease is let go, for Restate runs the workflow again itself. */
  onRunArrived(handler: (run: ArrivingRun) => Promise<Arrival>): void {
    this.base.onRunArrived(async () => 'closed');
    this.engine.onAdopt((sessionId, runId) => handler({ sessionId, runId }));
  }

  /** A run left going is submitted to Restate (found, when it was): it goes on unless its workflow has ended. */
  async interrupted(run: ArrivingRun): Promise<Interrupted> {
    const submitted = await this.engine.submit(run.runId, run.sessionId);
    return submitted.finished ? 'close' : 'go_on';
  }

  onLostLease(handler: (sessionId: string) => void): void {
    this.base.onLostLease(handler);
  }

  async health(): Promise<Record<string, boolean>> {
    const [base, restate] = await Promise.all([this.base.health(), this.engine.health()]);
    return { ...base, ...restate };
  }

  /** Joins the host beneath, then serves the runs' workflow (Restate may call at once). */
  async start(): Promise<void> {
    await this.base.start();
    await this.engine.start();
  }

  /** Runs live in their workflows: Restate goes on with them once this process (or another) serves them again. */
  drain(): AtShutdown {
    this.engine.drain();
    this.base.drain();
    return 'hand_over';
  }

  /** Stops serving the workflow before the host beneath lets its sessions go. */
  async close(): Promise<void> {
    await this.engine.close();
    await this.base.close();
  }
}

/** Commands travel as beneath; an answer to a run executing nowhere just now is kept by its workflow (the first one stands). */
export class RestateRouter implements RunRouter {
  constructor(
    private readonly base: RunRouter,
    private readonly engine: RestateEngine,
  ) {}

  sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    return this.base.sendToSession(sessionId, command);
  }

  keepAnswer(runId: string, questionId: string, answer: PersonAnswer): Promise<boolean> {
    return this.engine.recordAnswer(runId, questionId, answer);
  }
}
