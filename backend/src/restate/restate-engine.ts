import { createServer, type Http2Server } from 'node:http2';
import type * as restate from '@restatedev/restate-sdk';
import type { PersonAnswer } from '@stepwise/shared-types';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, StepwiseError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { RunEngine } from '../agent/kernel/run-engine.ts';
import type { Arrival } from '../hosting/run-host.ts';
import { JOURNAL, type JournalEntry, type RunJournal } from '../agent/kernel/run-journal.ts';
import type { RunHooks, RunKernel, RunOutcome, RunSession } from '../agent/kernel/run-kernel.ts';
import type { RunInput } from '../agent/kernel/strategy.ts';
import { abortReason } from '../util/abort.ts';
import { answerKey, RestateJournal, RunCancelledError } from './restate-journal.ts';
import { loadRestateSdk, restateSdk } from './restate-sdk.ts';

type RestateConfig = NonNullable<Config['restate']>;

/** The workflow each run is, keyed by the run's id. */
export const RUN_WORKFLOW = 'StepwiseRun';

/** A run waiting for its workflow to execute it: started here, or adopted after a restart. */
interface Pending {
  input: RunInput;
  session: RunSession;
  hooks: RunHooks;
  resolve: (outcome: RunOutcome) => void;
  taken: boolean;
}

/** An error after which Restate invokes the workflow again (the SDK is loaded once the engine started). */
const retryable = (message: string) => new (restateSdk().RetryableError)(message);

/** How long a workflow waits for the run it adopted to be set up here before Restate tries again. */
const ADOPT_WAIT_MS = 30_000;

/**
 * RUN_ENGINE=restate: each run is a Restate workflow keyed by its id, served by this process. The
 * workflow executes the run with the kernel, as the in-process engine does, but journals its
 * effects in Restate (RestateJournal). If this process dies mid-run, Restate invokes the workflow
 * again once the process (or another behind the same address) is back: the run goes on from its
 * journal, no completed model or tool call made again. Questions are durable promises; a stop is
 * a Restate cancellation as well as the abort of whatever the run was doing here.
 */
export class RestateEngine implements RunEngine {
  private readonly pending = new Map<string, Pending>();
  private readonly arrivals = new Map<string, Array<() => void>>();
  private server: Http2Server | undefined;
  /** Shutting down: its runs were handed over, and no attempt may start here any more. */
  private draining = false;
  private adopt: (sessionId: string, runId: string) => Promise<Arrival> = async () => 'closed';

  constructor(
    private readonly config: RestateConfig,
    private readonly kernel: RunKernel,
    private readonly storeJournal: RunJournal,
    private readonly logger: Logger,
    private readonly timeouts: { inactivityMs: number },
  ) {}

  /** Who sets up a run Restate executes here that no socket started here (after a restart). */
  onAdopt(adopt: (sessionId: string, runId: string) => Promise<Arrival>): void {
    this.adopt = adopt;
  }

  /** Serves the workflow and registers this process with Restate (retrying while Restate starts). */
  async start(): Promise<void> {
    const sdk = await loadRestateSdk();
    const workflow = sdk.workflow({
      name: RUN_WORKFLOW,
      handlers: {
        run: (ctx: restate.WorkflowContext, request: { sessionId: string }) => this.runWorkflow(ctx, request),
        /** An answer to one of the run's questions, from anywhere Restate's ingress is reachable. */
        answer: async (ctx: restate.WorkflowSharedContext, request: { questionId: string; answer: PersonAnswer }) => {
          try {
            await ctx.promise<PersonAnswer>(answerKey(request.questionId)).resolve(request.answer);
          } catch (error) {
            if (!(error instanceof sdk.TerminalError)) throw error;
            // Answered already: the first answer stands.
            return 'answered_already';
          }
          this.pending.get(ctx.key)?.session.control.provideInput(request.answer, request.questionId);
          return 'recorded';
        },
      },
      options: {
        // A model call or a question records nothing in Restate while it lasts: never cut it short.
        inactivityTimeout: this.timeouts.inactivityMs,
        abortTimeout: 60_000,
      },
    });
    // Requests signed by Restate only, when its keys are given; without them, keep the endpoint on loopback.
    const endpoint = sdk.endpoint().bind(workflow);
    if (this.config.identityKeys.length > 0) endpoint.withIdentityV1(...this.config.identityKeys);
    else if (!isLoopback(this.config.serviceHost)) {
      this.logger.warn(
        { host: this.config.serviceHost },
        "the runs' workflow endpoint is reachable beyond this machine and checks no signature: set RESTATE_IDENTITY_KEYS",
      );
    }
    const server = createServer(endpoint.http2Handler());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.servicePort, this.config.serviceHost, () => resolve());
    });
    this.server = server;
    await this.register();
  }

  /** From now on (shutting down, runs handed over) no attempt starts here: Restate tries elsewhere, or later. */
  drain(): void {
    this.draining = true;
  }

  async close(): Promise<void> {
    this.draining = true;
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Open streams end with the process; closing waits for none of them.
      setTimeout(resolve, 1_000).unref();
    });
  }

  /** Whether Restate's admin API answers, for the health endpoint. */
  async health(): Promise<{ restate: boolean }> {
    const restate = await fetch(`${this.config.adminUrl}/health`, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.ok,
      () => false,
    );
    return { restate };
  }

  async execute(input: RunInput, session: RunSession, hooks: RunHooks): Promise<RunOutcome> {
    const { runId } = input;
    const done = new Promise<RunOutcome>((resolve) => {
      this.pending.set(runId, { input, session, hooks, resolve, taken: false });
    });
    // An attempt waiting for this run here (it was set up for it) has the workflow going already.
    const awaited = this.arrivals.has(runId);
    for (const wake of this.arrivals.get(runId) ?? []) wake();
    this.arrivals.delete(runId);
    // Taken by an attempt (while being submitted, or it was waiting): Restate executes it.
    const executing = () => awaited || this.pending.get(runId)?.taken === true;
    let submitted: Awaited<ReturnType<RestateEngine['submit']>> = { invocationId: undefined, finished: false };
    try {
      submitted = await this.submit(runId, input.sessionId);
    } catch (error) {
      if (executing()) {
        this.logger.warn({ err: error, run_id: runId }, 'could not ask Restate about a run it executes');
        return done;
      }
      this.pending.delete(runId);
      this.logger.error({ err: error, run_id: runId }, 'could not start the run in Restate');
      // The run ends here, failed, saying why; nothing of it ran.
      return this.kernel.execute(input, session, { ...hooks, journal: unreachable(this.config.ingressUrl, error) });
    }
    if (submitted.finished && !executing()) {
      // Its workflow ended already (its end was not saved): the run closes from its journal here.
      this.pending.delete(runId);
      return this.kernel.execute(input, session, hooks);
    }
    const { control } = session;
    const untaken = () => {
      const waiting = this.pending.get(runId);
      if (!waiting || waiting.taken) return;
      // Stopped before Restate got to it: it ends here, and Restate is told not to run it.
      this.pending.delete(runId);
      if (!control.handedOver && submitted.invocationId) void this.cancel(submitted.invocationId);
      void this.kernel.execute(input, session, hooks).then(waiting.resolve);
    };
    control.signal.addEventListener('abort', untaken, { once: true });
    // Stopped while the workflow was being submitted.
    if (control.signal.aborted) untaken();
    try {
      const outcome = await done;
      // Parked: its workflow ends as the attempt returns. Until Restate holds that end, an answer given
      // at once would find the workflow still going, and wait for an attempt that never comes.
      if (outcome.status === 'parked' && submitted.invocationId) await this.ended(runId);
      return outcome;
    } finally {
      control.signal.removeEventListener('abort', untaken);
    }
  }

  /** Starts (or finds) the run's workflow; after a restart, each run still going is submitted again. */
  async submit(runId: string, sessionId: string): Promise<{ invocationId: string | undefined; finished: boolean }> {
    const response = await fetch(`${this.config.ingressUrl}/${RUN_WORKFLOW}/${encodeURIComponent(runId)}/run/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`Restate's ingress answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    const { invocationId, status } = (await response.json()) as { invocationId: string; status: string };
    if (status !== 'PreviouslyAccepted') return { invocationId, finished: false };
    const output = await fetch(`${this.config.ingressUrl}/restate/workflow/${RUN_WORKFLOW}/${encodeURIComponent(runId)}/output`, {
      signal: AbortSignal.timeout(10_000),
    });
    // 470: still going; its output, or its end as cancelled or failed: ended.
    if (output.status === 470) return { invocationId, finished: false };
    if ([200, 409, 500].includes(output.status)) return { invocationId, finished: true };
    throw new Error(`Restate's ingress answered ${output.status} for the output of run ${runId}`);
  }

  /** Resolves once Restate holds the run's workflow as ended (attached to its output; at most 10 s). */
  private async ended(runId: string): Promise<void> {
    try {
      const response = await fetch(`${this.config.ingressUrl}/restate/workflow/${RUN_WORKFLOW}/${encodeURIComponent(runId)}/attach`, {
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      // 200 its output, 409 / 500 its end as cancelled or failed: ended all the same.
      if (![200, 409, 500].includes(response.status))
        this.logger.warn({ run_id: runId, status: response.status }, 'Restate did not say the parked run’s workflow ended');
    } catch (error) {
      this.logger.warn({ err: error, run_id: runId }, 'could not learn from Restate that the parked run’s workflow ended');
    }
  }

  async recordAnswer(runId: string, questionId: string, answer: PersonAnswer): Promise<boolean> {
    const response = await fetch(`${this.config.ingressUrl}/${RUN_WORKFLOW}/${encodeURIComponent(runId)}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ questionId, answer }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`Restate's ingress answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    return (await response.json()) === 'recorded';
  }

  /** Cancels the run's workflow in Restate: nothing of it is run again. */
  private async cancel(invocationId: string): Promise<void> {
    try {
      const response = await fetch(`${this.config.adminUrl}/invocations/${encodeURIComponent(invocationId)}/cancel`, {
        method: 'PATCH',
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok && response.status !== 404) this.logger.warn({ invocation_id: invocationId, status: response.status }, 'Restate did not cancel the run');
    } catch (error) {
      this.logger.warn({ err: error, invocation_id: invocationId }, 'could not reach Restate to cancel the run');
    }
  }

  /** The workflow's run handler: one attempt of executing the run. */
  private async runWorkflow(ctx: restate.WorkflowContext, request: { sessionId: string }): Promise<string> {
    const runId = ctx.key;
    const invocationId = ctx.request().id;
    const attempt = ctx.request().attemptCompletedSignal;
    if (this.draining) throw retryable('This process is shutting down; the run goes on in the next attempt');
    let journal: RestateJournal;
    try {
      journal = await RestateJournal.open(ctx, this.storeJournal, runId);
    } catch (error) {
      if (!(error instanceof RunCancelledError)) throw error;
      // Cancelled while nothing executed it: it ends as stopped.
      const waiting = await this.take(request.sessionId, runId, attempt).catch(() => undefined);
      if (waiting) {
        waiting.session.control.stop('user');
        waiting.resolve(await this.kernel.execute(waiting.input, waiting.session, waiting.hooks));
      }
      return 'cancelled';
    }
    const waiting = await this.take(request.sessionId, runId, attempt);
    if (!waiting) return 'closed';
    // After a restart, the run goes on from Restate's journal (the store's copy was read before it was brought in line).
    const past = waiting.hooks.past;
    const hooks =
      past?.runId === runId
        ? { ...waiting.hooks, past: { ...past, entries: journal.recorded.filter((entry) => entry.kind !== JOURNAL.input) } }
        : waiting.hooks;
    const { control } = waiting.session;
    control.answers = journal.answers();
    journal.onCancelled = () => {
      control.stop('user');
      return abortReason(control.signal);
    };
    journal.onAttemptEnded = () => {
      control.handOver();
      return abortReason(control.signal);
    };
    // A stop (from any instance) is a Restate cancellation too: no retry ever runs the run on. A
    // parked run's workflow ends as parked instead: the answer resumes the run from the store's copy
    // of its journal (in this process, as the in-process engine would).
    const onStop = () => {
      if (!control.handedOver && !control.parkedOn) void this.cancel(invocationId);
    };
    control.signal.addEventListener('abort', onStop, { once: true });
    let finished = false;
    // The attempt ended under the run (Restate lost this process's stream): the next attempt goes on.
    const onAttemptEnd = () => {
      if (!finished) control.handOver();
    };
    attempt.addEventListener('abort', onAttemptEnd, { once: true });
    try {
      const outcome = await this.kernel.execute(waiting.input, waiting.session, { ...hooks, journal });
      finished = true;
      waiting.resolve(outcome);
      // Handed over (this process is shutting down): Restate runs the workflow again, elsewhere or later.
      if (control.handedOver) throw retryable('The run was handed over; it goes on in the next attempt');
      return outcome.status;
    } finally {
      finished = true;
      control.signal.removeEventListener('abort', onStop);
      attempt.removeEventListener('abort', onAttemptEnd);
      control.answers = undefined;
      if (this.pending.get(runId) === waiting) this.pending.delete(runId);
    }
  }

  /**
   * The run this attempt executes: the one a socket started here, or else the one set up here now
   * (after a restart, or on another instance) from the session's store. Undefined when the run
   * has ended meanwhile and there is nothing to execute.
   */
  private async take(sessionId: string, runId: string, attempt: AbortSignal): Promise<Pending | undefined> {
    let waiting = this.pending.get(runId);
    if (!waiting || waiting.taken) {
      if (this.draining) throw retryable('This process is shutting down; the run goes on in the next attempt');
      if ((await this.adopt(sessionId, runId)) === 'closed') return undefined;
      waiting = await this.arrival(runId, attempt);
    }
    // A run is executed by one attempt at a time; an attempt that ended meanwhile takes nothing.
    if (waiting.taken || attempt.aborted) throw retryable(`Run ${runId} is executing in another attempt, or this one ended`);
    waiting.taken = true;
    return waiting;
  }

  private arrival(runId: string, attempt: AbortSignal): Promise<Pending> {
    return new Promise((resolve, reject) => {
      const found = this.pending.get(runId);
      if (found && !found.taken) return resolve(found);
      // Still held by an attempt that is ending: Restate tries again shortly.
      if (found) return reject(retryable(`Run ${runId} is still held by an earlier attempt`));
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        attempt.removeEventListener('abort', ended);
        const left = (this.arrivals.get(runId) ?? []).filter((other) => other !== wake);
        if (left.length > 0) this.arrivals.set(runId, left);
        else this.arrivals.delete(runId);
        outcome();
      };
      const timer = setTimeout(() => settle(() => reject(retryable(`Run ${runId} was not set up here in time`))), ADOPT_WAIT_MS);
      const ended = () => settle(() => reject(retryable('The attempt ended')));
      attempt.addEventListener('abort', ended, { once: true });
      const wake = () =>
        settle(() => {
          const arrived = this.pending.get(runId);
          if (arrived && !arrived.taken) resolve(arrived);
          else reject(retryable(`Run ${runId} went away while being set up`));
        });
      this.arrivals.set(runId, [...(this.arrivals.get(runId) ?? []), wake]);
    });
  }

  /** Registers this process's endpoint with Restate's admin API, retrying for up to a minute. */
  private async register(): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await fetch(`${this.config.adminUrl}/deployments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ uri: this.config.serviceUrl, force: true }),
          signal: AbortSignal.timeout(10_000),
        });
        if (response.ok) {
          this.logger.info({ service_url: this.config.serviceUrl, admin_url: this.config.adminUrl }, 'registered with Restate');
          return;
        }
        throw new Error(`Restate's admin API answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      } catch (error) {
        if (Date.now() > deadline) {
          throw new StepwiseError(
            ERROR_CODE.engineUnavailable,
            `Could not register with Restate at ${this.config.adminUrl} (RESTATE_ADMIN_URL): ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        if (attempt === 1) this.logger.warn({ err: error }, 'Restate is not reachable yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
      }
    }
  }
}

/** A journal for a run Restate could not start: its first record fails, saying why. */
function unreachable(ingressUrl: string, cause: unknown): RunJournal {
  const fail = async (): Promise<never> => {
    throw new StepwiseError(
      ERROR_CODE.engineUnavailable,
      `The run could not start: Restate is not reachable at ${ingressUrl} (${cause instanceof Error ? cause.message : String(cause)})`,
    );
  };
  return { read: async () => [] as JournalEntry[], append: fail, truncate: fail };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}
