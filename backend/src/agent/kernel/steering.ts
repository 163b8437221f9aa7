import type { LlmMessage } from '../../messages.ts';

/** A person's message to a running run: read by the model at the run's next boundary (see SteeringInbox). */
export interface Steer {
  id: string;
  content: string;
  /** The branch it is for (a research task, a plan step); without, the run's own sequence. */
  nodeId?: string | undefined;
  /** `interrupt`: it also cuts the model call in flight on its branch. */
  delivery: 'steer' | 'interrupt';
}

/** A model call as the inbox sees it: a signal an interrupt for its branch aborts, and whether one did. */
export interface InterruptibleCall {
  readonly signal: AbortSignal;
  /** True when an interrupt (not a stop) cut the call. */
  readonly interrupted: boolean;
  /** The call is over: an interrupt no longer reaches it. */
  end(): void;
}

/**
 * The messages people sent to one run that it has not read yet. The run takes them at its safe
 * boundaries: right before each model call, the steers for that call's branch (a call of the run's
 * own sequence takes those for no branch). Each message is taken once: an id the run took already
 * (live, or in the past it replays) is never taken again, whoever adds it again.
 */
export class SteeringInbox {
  private readonly waiting: Steer[] = [];
  /** Ids taken (or withdrawn): never taken again. */
  private readonly settled = new Set<string>();
  /** Model calls in flight, by branch ('' for the run's own sequence). */
  private readonly calls = new Map<string, Set<AbortController>>();

  /** Adds a message for the run; false when it was taken or withdrawn already. An interrupt cuts its branch's model call now. */
  add(steer: Steer): boolean {
    if (this.settled.has(steer.id)) return false;
    if (!this.waiting.some((waiting) => waiting.id === steer.id)) this.waiting.push(steer);
    if (steer.delivery === 'interrupt') this.interrupt(steer.nodeId);
    return true;
  }

  /** Withdraws a message the run has not taken: `cancelled`; `read` when it took it already; `unknown` when it never had it. */
  cancel(id: string): 'cancelled' | 'read' | 'unknown' {
    const index = this.waiting.findIndex((steer) => steer.id === id);
    if (index < 0) return this.settled.has(id) ? 'read' : 'unknown';
    this.waiting.splice(index, 1);
    this.settled.add(id);
    return 'cancelled';
  }

  /** Takes the messages waiting for a call of this branch, oldest first. */
  take(nodeId: string | undefined): Steer[] {
    const taken = this.waiting.filter((steer) => steer.nodeId === nodeId);
    for (const steer of taken) {
      this.waiting.splice(this.waiting.indexOf(steer), 1);
      this.settled.add(steer.id);
    }
    return taken;
  }

  /** Marks messages taken already (by the past the run replays): they are not taken again. */
  taken(ids: Iterable<string>): void {
    for (const id of ids) {
      this.settled.add(id);
      const index = this.waiting.findIndex((steer) => steer.id === id);
      if (index >= 0) this.waiting.splice(index, 1);
    }
  }

  /** Whether a message waits (for any branch). */
  has(id: string): boolean {
    return this.waiting.some((steer) => steer.id === id);
  }

  /** The messages still waiting, oldest first (a run that ended without reading them hands them on). */
  get unread(): readonly Steer[] {
    return this.waiting;
  }

  /** Opens a model call of a branch that an interrupt for that branch cuts (as `signal`, or a stop, would). */
  call(nodeId: string | undefined, signal: AbortSignal): InterruptibleCall {
    const controller = new AbortController();
    const branch = nodeId ?? '';
    let interrupted = false;
    const onAbort = () => controller.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const calls = this.calls.get(branch) ?? new Set();
    this.calls.set(branch, calls);
    calls.add(controller);
    controller.signal.addEventListener(
      'abort',
      () => {
        interrupted = !signal.aborted;
      },
      { once: true },
    );
    return {
      signal: controller.signal,
      get interrupted() {
        return interrupted;
      },
      end: () => {
        signal.removeEventListener('abort', onAbort);
        calls.delete(controller);
        if (calls.size === 0 && this.calls.get(branch) === calls) this.calls.delete(branch);
      },
    };
  }

  private interrupt(nodeId: string | undefined): void {
    for (const controller of this.calls.get(nodeId ?? '') ?? []) {
      const error = new Error('Model call interrupted by a message');
      error.name = 'AbortError';
      controller.abort(error);
    }
  }
}

const STEER_PREAMBLE = 'A message from the person while you work (take it into account from now on):\n';

/** A taken message as the model reads it: a user turn that says where it comes from. */
export function steerTurn(steer: Steer): LlmMessage {
  return { role: 'user', content: `${STEER_PREAMBLE}${steer.content}` };
}

/** Whether a user turn is a person's message read during a run (not the request the run answers). */
export function isSteerTurn(content: string): boolean {
  return content.startsWith(STEER_PREAMBLE);
}
