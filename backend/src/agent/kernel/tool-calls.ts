import { isAbortError } from '../../errors.ts';
import type { LlmMessage, LlmToolCall } from '../../messages.ts';
import { REQUEST_INPUT_TOOL } from '../../tools/request-input-tool.ts';
import { ApprovalDecision, type StoppedCall } from '@stepwise/shared-types';
import { readApproval } from '../../tools/approval.ts';
import { type AgentControl, anyText } from './agent-control.ts';
import { type AnswerRecord, askPerson, inputTimeout, type OnTimeout } from './ask.ts';
import { JOURNAL } from './run-journal.ts';
import type { RunEvents } from './run-events.ts';
import type { Run, RunProgress } from './strategy.ts';

/** The part of a run its tool calls use; `events` may be a branch's (`run.events.node(id)`). */
type CallContext = Pick<Run, 'input' | 'tools' | 'control' | 'sink' | 'logger' | 'inputTimeoutMs' | 'inputTimeoutAction' | 'effects'> & {
  events: RunEvents;
  nodeId?: string | undefined;
  /** Where the stop receipt goes (the run's progress). */
  progress?: RunProgress;
  /** What an approval nobody answered in time does (APPROVAL_TIMEOUT_ACTION). */
  approvalTimeoutAction?: 'park' | 'deny' | 'stop';
};

/**
 * What the model reads of a call nobody approved in time (APPROVAL_TIMEOUT_ACTION=deny): that
 * nobody answered, never that a person denied it.
 */
export const NOT_APPROVED_IN_TIME = 'Nobody answered the approval request in time; the call was not made.';

/** The tools a person approved for the rest of a run ("Always in this run"), by run. */
/**
 * The tools a person approved "for this run", by run: true when the approval was the past's, the
 * run this one continues. Such an approval covers the calls the continued run replays from that
 * past, never a new call: a continued run is a new run, and asks again.
 */
const rememberedByRun = new WeakMap<AgentControl, Map<string, boolean>>();

/** One finished tool call: what the model reads back, and a line for the observe prompt. */
export interface ToolCallRecord {
  call: LlmToolCall;
  content: string;
  summary: string;
}

const SUMMARY_MAX_CHARS = 2_000;

/**
 * Runs the tool calls of one act phase. Ordinary tools run in parallel (they are independent by
 * construction: the model issued them together); `request_input` questions are asked one at a
 * time. Results come back in the model's order, each under its call's id, made unique first (see
 * withUniqueIds). Every result and answer is journaled, so a run that goes on from its past gets
 * them back without calling or asking again. Rejects on stop and on input timeout; on stop only
 * once every call in flight has settled (the registry bounds how long that may take), so no tool
 * of the run is still at work when its ending is logged.
 */
export async function runToolCalls(modelCalls: LlmToolCall[], step: number, context: CallContext): Promise<ToolCallRecord[]> {
  const calls = withUniqueIds(modelCalls);
  const input = context.input;
  const enabled = new Set(input.toolNames);
  const done = new Map<string, ToolCallRecord>();
  const ordinary = calls.filter((call) => call.name !== REQUEST_INPUT_TOOL);
  // The stop receipt: what became of each call, should the run be stopped during them.
  const receipt = new Map<string, StoppedCall>(ordinary.map((call) => [call.id, { tool_call_id: call.id, tool: call.name, status: 'not_started' }]));
  const settled = await Promise.allSettled(ordinary.map((call) => runOrdinary(call, step, enabled, input, context, receipt.get(call.id)!)));
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure) {
    if (context.progress && isAbortError(failure.reason, context.control.signal))
      context.progress.stoppedCalls = [...(context.progress.stoppedCalls ?? []), ...receipt.values()];
    throw failure.reason;
  }
  for (const result of settled) if (result.status === 'fulfilled') done.set(result.value.call.id, result.value);

  for (const call of calls) {
    if (call.name === REQUEST_INPUT_TOOL) done.set(call.id, await askUser(call, step, context));
  }
  return calls.map((call) => done.get(call.id)!);
}

/**
 * Gives every call of one reply its own id. Some endpoints repeat an id within a reply, and the
 * next request must answer each call exactly once, so a repeat gets a suffix (`a`, `a_2`, `a_3`…)
 * that no other call of the reply has. The records carry the new ids into both the assistant
 * message and the tool results. Deterministic, so a resumed act phase names its calls the same way.
 */
export function withUniqueIds(calls: LlmToolCall[]): LlmToolCall[] {
  const original = new Set(calls.map((call) => call.id));
  const used = new Set<string>();
  return calls.map((call) => {
    let id = call.id;
    // A suffixed id must not be one that another call of the reply came with.
    for (let suffix = 2; used.has(id) || (id !== call.id && original.has(id)); suffix++) id = `${call.id}_${suffix}`;
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/** The assistant's tool-call message followed by each call's result, as the model expects them. */
export function toolCallMessages(text: string, records: ToolCallRecord[]): LlmMessage[] {
  return [
    { role: 'assistant', content: text || null, toolCalls: records.map((record) => record.call) },
    ...records.map((record): LlmMessage => ({ role: 'tool', toolCallId: record.call.id, content: record.content })),
  ];
}

async function runOrdinary(
  call: LlmToolCall,
  step: number,
  enabled: ReadonlySet<string>,
  input: Run['input'],
  context: CallContext,
  receipt: StoppedCall,
): Promise<ToolCallRecord> {
  const { events, sink, tools, control } = context;
  let args: Record<string, unknown>;
  try {
    args = tools.parseArguments(call.arguments);
  } catch {
    args = { raw: call.arguments };
  }
  await sink.emit(events.toolStart(step, call.id, call.name, args));
  // The approval policy: the call runs, a person approves it first, or it never runs.
  const policy = enabled.has(call.name) ? tools.policy(call.name, args, input.toolApproval) : 'auto';
  const remembered = rememberedByRun.get(control.run) ?? new Map<string, boolean>();
  rememberedByRun.set(control.run, remembered);
  const fromPast = remembered.get(call.name);
  const covered = fromPast !== undefined && (!fromPast || context.effects.has(JOURNAL.tool, `${call.name}:${call.id}`));
  let note = '';
  if (policy === 'deny' || (policy === 'ask' && !covered)) {
    const decision = policy === 'deny' ? ({ decision: 'deny', policy: true } as const) : await approval(call, step, args, context);
    if (decision.decision === 'deny') {
      const error =
        'policy' in decision
          ? `The approval policy denies ${call.name}: the call did not run`
          : 'unanswered' in decision
            ? NOT_APPROVED_IN_TIME
            : `The person denied this call${decision.reason ? `: ${decision.reason}` : ''}`;
      await sink.emit(events.toolError(step, call.id, call.name, error, 0));
      receipt.status = 'completed';
      return { call, content: error, summary: summarize(`${call.name}(${JSON.stringify(args)})`, error) };
    }
    // An approval of this run's own is never narrowed by one replayed from the past (parallel branches).
    if (decision.remember === 'run' && remembered.get(call.name) !== false) remembered.set(call.name, decision.replayedFromPast === true);
    if (decision.arguments) {
      args = decision.arguments;
      call = { ...call, arguments: JSON.stringify(args) };
      note = `(The person edited the arguments before approving: ${JSON.stringify(args)})\n`;
    }
  }
  receipt.status = 'unknown';
  const outcome = await tools.execute(call, enabled, {
    onStopped: (settledInTime) => (receipt.status = settledInTime ? 'cancelled' : 'unknown'),
    signal: control.signal,
    sessionId: input.sessionId,
    runId: input.runId,
    askUser: (question, signal) => askDuringCall(call, step, question, context, signal),
    onProgress: ({ progress, total, message }) =>
      sink.progress({
        type: 'tool_progress',
        run_id: input.runId,
        ...(context.nodeId ? { node_id: context.nodeId } : {}),
        step,
        tool_call_id: call.id,
        tool_name: call.name,
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message: message.slice(0, 500) }),
      }),
  });
  receipt.status = 'completed';
  context.logger.debug({ step, tool: call.name, ok: outcome.ok, duration_ms: outcome.durationMs }, 'tool done');
  if (outcome.ok) {
    await sink.emit(events.toolComplete(step, call.id, call.name, outcome.result, outcome.durationMs, note ? args : undefined));
  } else {
    await sink.emit(events.toolError(step, call.id, call.name, outcome.error, outcome.durationMs));
  }
  return { call, content: `${note}${outcome.content}`, summary: summarize(`${call.name}(${JSON.stringify(args)})`, outcome.content) };
}

/**
 * A call that needs a person: an approval question (kind "approval", its tool and arguments,
 * Approve / Deny), answered with `agent_user_input.approval`. The question (its id, its deadline)
 * and the decision are journaled like request_input's: after a restart a pending approval keeps
 * its id and deadline, and an approved call that ran is not asked again (nor run twice: the
 * tool's result is journaled). Edited arguments are checked against the tool's schema before the
 * run takes them (a mismatch leaves the question open). No answer in time, by
 * APPROVAL_TIMEOUT_ACTION: the run is parked (park), stops (stop), or the call is not made and the
 * model is told nobody answered (deny).
 */
async function approval(
  call: LlmToolCall,
  step: number,
  args: Record<string, unknown>,
  context: CallContext,
): Promise<ApprovalDecision & { replayedFromPast?: boolean; unanswered?: true }> {
  const { events, effects, tools } = context;
  const question = `Allow ${call.name} to run with ${describeArguments(args)}?`;
  const answered = await askPerson<ApprovalDecision>(context, {
    key: `approval:${call.id}`,
    rounds: { kind: 'again' },
    step,
    show: (asked) => events.approval(step, question, call.id, asked.id, new Date(asked.deadline), call.name, args),
    read: (answer) => {
      const read = readApproval(answer);
      if (!read) return { ok: false, outcome: 'invalid_answer', message: 'An approval takes Approve or Deny (or an "approval" object); it is still waiting' };
      if (read.decision === 'approve' && read.arguments) {
        const problem = tools.checkArguments(call.name, read.arguments);
        if (problem) return { ok: false, outcome: 'invalid_arguments', message: problem };
      }
      return { ok: true, value: read };
    },
    onTimeout: approvalTimeout(context.approvalTimeoutAction),
    record: APPROVAL_RECORD,
  });
  const unanswered = answered.value.decision === 'deny' && (answered.value.reason === UNANSWERED || answered.value.reason === LEGACY_UNANSWERED);
  return { ...answered.value, replayedFromPast: effects.continues && answered.replayed, ...(unanswered ? { unanswered: true as const } : {}) };
}

/** The reason a decision nobody made carries in the journal (APPROVAL_TIMEOUT_ACTION=deny). */
const UNANSWERED = 'nobody answered in time';
/** The same, as runs journaled it before (their replays read it the same way). */
const LEGACY_UNANSWERED = 'it was not approved in time';

/** What an approval nobody answered in time does (see approval). */
function approvalTimeout(action: CallContext['approvalTimeoutAction']): OnTimeout<ApprovalDecision> {
  switch (action) {
    case 'stop':
      return { kind: 'fail' };
    case 'deny':
      return { kind: 'answer', value: { decision: 'deny', reason: UNANSWERED } };
    case 'park':
    case undefined:
      return { kind: 'park' };
    default: {
      const unknown: never = action;
      throw new Error(`Unknown approval timeout action ${String(unknown)}`);
    }
  }
}

/**
 * A decision as the journal holds it, `{answer}`. Runs journaled before decisions were kept typed
 * hold the decision's JSON text there: it is read back once, here, so that they go on unchanged.
 */
const APPROVAL_RECORD: AnswerRecord<ApprovalDecision> = {
  write: (value) => ({ answer: value }),
  read: (recorded) => {
    const answer = (recorded as { answer?: unknown } | undefined)?.answer;
    const decision = ApprovalDecision.safeParse(typeof answer === 'string' ? parseJournaledText(answer) : answer);
    return { value: decision.success ? decision.data : { decision: 'deny', reason: 'the answer could not be read' } };
  },
};

function parseJournaledText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return readApproval({ kind: 'text', text });
  }
}

/** A call's arguments in a line: `name: "out.txt", content: "…"`. */
function describeArguments(args: Record<string, unknown>): string {
  const entries = Object.entries(args);
  if (entries.length === 0) return 'no arguments';
  const text = entries.map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(', ');
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** request_input's answer as the journal holds it: the words, and how long the person took. */
const REQUEST_INPUT_RECORD: AnswerRecord<string> = {
  write: (answer, durationMs) => ({ answer, durationMs }),
  read: (recorded) => {
    const { answer, durationMs } = recorded as { answer: string; durationMs?: number };
    return { value: answer, durationMs };
  },
};

/**
 * The virtual request_input tool: show the question, wait for the answer, return it as the result.
 * The question (its id, its deadline) and the answer are journaled: a run going on from its past
 * shows the same question and, when it was answered, takes the answer without asking again; one
 * that timed out is asked afresh. After a restart, a question still waiting keeps its deadline.
 */
async function askUser(call: LlmToolCall, step: number, context: CallContext): Promise<ToolCallRecord> {
  const { events, sink } = context;
  const question = readQuestion(call, context);
  if (!question) {
    const error = 'request_input needs a non-empty "question" string';
    await sink.emit(events.toolStart(step, call.id, call.name, { raw: call.arguments }));
    await sink.emit(events.toolError(step, call.id, call.name, error, 0));
    return { call, content: `Error: ${error}`, summary: summarize(REQUEST_INPUT_TOOL, `Error: ${error}`) };
  }
  await sink.emit(events.toolStart(step, call.id, call.name, { question }));
  const { value: answer, durationMs } = await askPerson(context, {
    key: call.id,
    rounds: { kind: 'again' },
    step,
    show: (asked) => events.requestInput(step, question, call.id, asked.id, new Date(asked.deadline)),
    read: anyText,
    onTimeout: inputTimeout(context),
    record: REQUEST_INPUT_RECORD,
  });
  await sink.emit(events.toolComplete(step, call.id, call.name, answer, durationMs ?? 0));
  return {
    call,
    content: answer,
    summary: summarize(`asked the user "${question}"`, `the user answered: ${answer}`),
  };
}

/**
 * A question from inside a running tool (an MCP server's elicitation): shown and answered like the
 * agent's own, under the same call id; not journaled (the call's result is). No answer in time
 * stops the run, as for request_input.
 */
async function askDuringCall(call: LlmToolCall, step: number, question: string, context: CallContext, signal?: AbortSignal): Promise<string> {
  const { events } = context;
  const answered = await askPerson(context, {
    key: undefined,
    step,
    show: (asked) => events.requestInput(step, question, call.id, asked.id, new Date(asked.deadline)),
    read: anyText,
    onTimeout: { kind: 'stop' },
    signal,
  });
  return answered.value;
}

function readQuestion(call: LlmToolCall, context: CallContext): string {
  try {
    const args = context.tools.parseArguments(call.arguments);
    return typeof args.question === 'string' ? args.question.trim() : '';
  } catch {
    return '';
  }
}

function summarize(what: string, result: string): string {
  const line = `- ${what} → ${result}`;
  return line.length > SUMMARY_MAX_CHARS ? `${line.slice(0, SUMMARY_MAX_CHARS)}…` : line;
}
