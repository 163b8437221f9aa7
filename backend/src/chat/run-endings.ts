import type { LoggedEvent, LoggedEventBody } from '@stepwise/shared-types';
import type { Logger } from '../logger.ts';
import type { RunEnd, RunRecord, Store } from '../store/store.ts';

/** The update types of a run's one ending (readAgentEvent reads each). */
export const RUN_ENDINGS: ReadonlySet<string> = new Set(['agent_completion', 'agent_stopped', 'agent_error']);

/** How many logged events a scan of the log reads at a time. */
const SCAN_PAGE_SIZE = 1_000;

/**
 * Saves how a run ended. When the store refuses that (a value it cannot hold, say), it tries once
 * more with the status and reason alone: a run left open in the store would be ended a second time
 * by the next restart. Never rejects; false when neither write went through.
 */
export async function saveRunEnd(store: Store, runId: string, end: RunEnd, logger: Logger): Promise<boolean> {
  try {
    await store.finishRun(runId, end);
    return true;
  } catch (error) {
    logger.error({ err: error, run_id: runId }, 'could not save the end of the run; saving its status alone');
  }
  try {
    await store.finishRun(runId, { status: end.status, endReason: end.endReason });
    return true;
  } catch (error) {
    logger.error({ err: error, run_id: runId }, 'could not save the end of the run');
    return false;
  }
}

/** What a session's log holds of one run. */
export interface LoggedRun {
  /** The last step its events name; 0 when none does. */
  step: number;
  /** What its logged ending says, when one is logged. */
  end?: RunEnd | undefined;
  /** True once its response_complete is logged: the run has ended, whatever the store says. */
  complete: boolean;
  /** Its agent_start: strategy, options, tools. */
  start?:
    | { strategy?: string | undefined; options?: Record<string, unknown> | undefined; tools?: string[] | undefined; resumedFrom?: string | undefined }
    | undefined;
  /** Why it completed, when it did: answered, max_steps, … */
  completionReason?: string | undefined;
}

/**
 * Reads a run back from its session's log, for a restart that finds it still running in the store.
 * An agent run's events carry its id. A plain chat answer's do not: its events are the ones after
 * the seq it began at, up to the first response_complete (a session answers one message at a
 * time); without that seq (a run stored before it was kept) nothing is known of it.
 */
export async function readLoggedRun(store: Store, run: RunRecord, options: { plainChat: boolean }): Promise<LoggedRun> {
  const logged: LoggedRun = { step: 0, complete: false };
  if (options.plainChat && run.afterSeq === undefined) return logged;
  const read = options.plainChat ? readPlainChatEvent : readAgentEvent;
  for await (const event of sessionEvents(store, run.sessionId, run.afterSeq ?? 0)) {
    read(logged, event, run.id);
    if (logged.complete) break;
  }
  return logged;
}

/** A session's logged events after `afterSeq`, in order, read from the store a page at a time. */
export async function* sessionEvents(store: Store, sessionId: string, afterSeq = 0): AsyncGenerator<LoggedEvent> {
  let after = afterSeq;
  for (;;) {
    const page = await store.listEvents(sessionId, after, SCAN_PAGE_SIZE);
    yield* page;
    if (page.length < SCAN_PAGE_SIZE) return;
    after = page.at(-1)!.seq;
  }
}

/** True when the log shows the run's ending, or its response_complete: nothing of it may run again. */
export function hasEnded(logged: LoggedRun): boolean {
  return logged.complete || logged.end !== undefined;
}

function readAgentEvent(logged: LoggedRun, event: LoggedEvent, runId: string): void {
  if (event.run_id !== runId) return;
  if ('step' in event && typeof event.step === 'number') logged.step = event.step;
  if (event.type === 'response_complete') logged.complete = true;
  if (event.type !== 'agent_update') return;
  switch (event.update_type) {
    case 'agent_start':
      logged.start = { strategy: event.strategy, options: event.options, tools: event.tools, resumedFrom: event.resumed_from };
      break;
    case 'agent_completion':
      logged.end = { status: 'completed', steps: event.steps };
      logged.completionReason = event.reason;
      break;
    case 'agent_stopped':
      logged.end = { status: 'stopped', endReason: event.reason ?? 'user', steps: logged.step };
      break;
    case 'agent_error':
      logged.end = { status: 'failed', endReason: event.message, steps: logged.step };
      break;
    default:
      break;
  }
}

function readPlainChatEvent(logged: LoggedRun, event: LoggedEvent): void {
  // An answer that was shown completed the run; one that ended without an answer was cut short.
  if (event.type === 'assistant_message') logged.end = { status: 'completed' };
  if (event.type === 'response_complete') {
    logged.end ??= { status: 'stopped' };
    logged.complete = true;
  }
}

/** The events the kernel logs around a strategy's own: its start and its ending. */
const KERNEL_EVENTS = new Set(['agent_start', ...RUN_ENDINGS, 'assistant_message', 'response_complete']);

/**
 * The events a run's strategy logged, in order (its start and ending left out): what a run going on
 * from that past will not log again. Plain chat answers log none of their own.
 */
export async function strategyEventsOf(store: Store, run: RunRecord, options: { upToSeq?: number } = {}): Promise<LoggedEventBody[]> {
  // A continued run's past includes the runs it continues: their events too.
  const chain = new Set([run.id]);
  const found: LoggedEventBody[] = [];
  let after = 0;
  const pages: LoggedEvent[][] = [];
  for (;;) {
    const page = await store.listEvents(run.sessionId, after, SCAN_PAGE_SIZE);
    pages.push(page);
    if (page.length < SCAN_PAGE_SIZE) break;
    after = page.at(-1)!.seq;
  }
  const events = pages.flat();
  for (let changed = true; changed; ) {
    changed = false;
    for (const event of events) {
      if (
        event.type === 'agent_update' &&
        event.update_type === 'agent_start' &&
        event.run_id &&
        chain.has(event.run_id) &&
        event.resumed_from &&
        !chain.has(event.resumed_from)
      ) {
        chain.add(event.resumed_from);
        changed = true;
      }
    }
  }
  for (const event of events) {
    if (!event.run_id || !chain.has(event.run_id)) continue;
    if (options.upToSeq !== undefined && event.seq > options.upToSeq) continue;
    const kind = event.type === 'agent_update' ? event.update_type : event.type;
    if (KERNEL_EVENTS.has(kind)) continue;
    const { seq: _seq, ts: _ts, ...body } = event;
    found.push(body as LoggedEventBody);
  }
  return found;
}
