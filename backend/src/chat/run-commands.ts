import {
  type AgentControlMessage,
  type AgentUserInputMessage,
  answerOf,
  type By,
  type ClientMessage,
  type ErrorCode,
  type ErrorEvent,
  type PersonAnswer,
} from '@stepwise/shared-types';
import type { AgentControl, InputOutcome } from '../agent/kernel/agent-control.ts';
import type { ControlCommand, ControlOutcome } from '../agent/kernel/control-bus.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { askedIn } from './parked-runs.ts';
import type { SessionEventLog } from './session-event-log.ts';

export const reject = (code: ErrorCode, message: string): ErrorEvent => ({ type: 'error', code, message });

/** A run's side of the control bus: stop and answers reach its AgentControl. */
export function handleCommand(control: AgentControl, command: ControlCommand): ControlOutcome {
  switch (command.type) {
    case 'stop':
      if (command.nodeId !== undefined) return { type: 'stop', outcome: control.stopBranch(command.nodeId, command.by) ? 'stopping' : 'unknown_node' };
      control.stop(command.reason, command.by);
      return { type: 'stop', outcome: 'stopping' };
    case 'resume_branch':
      return { type: 'resume_branch', outcome: control.resumeBranch(command.nodeId) ? 'resuming' : 'unknown_node' };
    case 'answer': {
      const outcome = control.provideInput(command.answer, command.questionId, command.by);
      return outcome === 'answered' || !control.rejection ? { type: 'answer', outcome } : { type: 'answer', outcome, message: control.rejection };
    }
    case 'steer':
      return { type: 'steer', outcome: control.steering.add(command.steer) ? 'waiting' : 'read' };
    case 'cancel':
      return { type: 'cancel', outcome: control.steering.cancel(command.messageId) };
    default: {
      const unexpected: never = command;
      throw new Error(`Unknown control command ${JSON.stringify(unexpected)}`);
    }
  }
}

/** Whether an answer's outcome leaves it for a run's host to keep (the run is not waiting for it just now). */
export function mayKeep(outcome: InputOutcome): boolean {
  return outcome === 'no_pending_input' || outcome === 'unknown_question';
}

/** What the sender of an answer hears of its outcome: nothing when it was taken, else why not. */
export function answerRefusal(outcome: InputOutcome, reply: ControlOutcome, questionId: string | undefined): ErrorEvent | undefined {
  const message = reply.type === 'answer' ? reply.message : undefined;
  switch (outcome) {
    case 'answered':
      return undefined;
    case 'no_pending_input':
      return reject('no_pending_input', 'The agent is not waiting for an answer');
    case 'unknown_question':
      return reject('no_pending_input', `No question with id "${(questionId ?? '').slice(0, 100)}" is waiting`);
    case 'ambiguous_input':
      return reject('ambiguous_input', 'Several questions are waiting: say which one this answers with question_id');
    case 'invalid_answer':
      return reject('invalid_answer', message || 'This question takes only one of its choices (such as Yes or No); it is still waiting');
    case 'invalid_arguments':
      return reject('invalid_arguments', `${message || 'The edited arguments do not fit the tool'}; the approval is still waiting`);
    default: {
      const unexpected: never = outcome;
      return reject('internal_error', `Unexpected outcome ${String(unexpected)}`);
    }
  }
}

/**
 * A run that is not executing just now (its process restarting) may still take the answer to a
 * question it asked, when its router keeps answers (Restate): it takes it when it asks again.
 * True when the answer was kept.
 */
export async function keepAnswer(
  deps: Pick<ChatDependencies, 'store' | 'router'>,
  sessionId: string,
  questionId: string,
  answer: PersonAnswer,
): Promise<boolean> {
  const { router, store } = deps;
  const run = await store.lastRun(sessionId);
  if (run?.status !== 'running') return false;
  const deadline = (await askedIn(store, run, questionId))?.deadline;
  if (deadline === undefined || Date.parse(deadline) <= Date.now()) return false;
  return router.keepAnswer(run.id, questionId, answer);
}

/** A message a strategy takes itself (autonomous's `todos_set`), handed to that strategy. */
export async function strategyMessage(
  deps: Pick<ChatDependencies, 'kernel' | 'files'>,
  sessionId: string,
  log: SessionEventLog,
  message: ClientMessage,
): Promise<ErrorEvent | undefined> {
  const handler = deps.kernel.clientMessageHandler(message.type);
  if (!handler) return reject('unknown_type', `No strategy takes "${message.type}" messages`);
  return handler(message, {
    sessionId,
    writeFile: async (name, content) => void (await deps.files.write(sessionId, name, content, { source: 'user' })),
    emit: (event) => log.record(event),
  });
}

/** Sends a command to the session's run, wherever it executes. */
type SendCommand = (command: ControlCommand) => Promise<ControlOutcome>;

/** Stops the session's run (or one branch of it), or runs a stopped branch again; the error for its sender, if any. */
export async function controlRun(message: AgentControlMessage, by: By | undefined, send: SendCommand): Promise<ErrorEvent | undefined> {
  const nodeId = message.node_id;
  const reply =
    message.action === 'resume' && nodeId !== undefined
      ? await send({ type: 'resume_branch', nodeId, ...(by ? { by } : {}) })
      : await send({ type: 'stop', reason: 'user', ...(by ? { by } : {}), ...(nodeId === undefined ? {} : { nodeId }) });
  const outcome = reply.type === 'stop' || reply.type === 'resume_branch' ? reply.outcome : 'no_active_run';
  if (outcome === 'no_active_run') return reject('no_active_run', `There is no active run to ${message.action}`);
  if (outcome === 'unknown_node')
    return reject(
      'unknown_node',
      `The run has no branch "${(nodeId ?? '').slice(0, 100)}" that can be ${message.action === 'stop' ? 'stopped' : 'run again'} now`,
    );
  return undefined;
}

/** Hands a person's answer to the question it names, wherever the run executes (or keeps it for the run); the error for its sender, if any. */
export async function answerRun(
  deps: Pick<ChatDependencies, 'store' | 'router'>,
  sessionId: string,
  message: AgentUserInputMessage,
  by: By | undefined,
  send: SendCommand,
  /** Offers an answer no run took to a run parked on the question: its refusal, undefined when taken, or `not_parked`. */
  parked?: (questionId: string | undefined, answer: PersonAnswer) => Promise<ErrorEvent | undefined | 'not_parked'>,
): Promise<ErrorEvent | undefined> {
  const answer = answerOf(message);
  const reply = await send({ type: 'answer', answer, questionId: message.question_id, ...(by ? { by } : {}) });
  let outcome = reply.type === 'answer' ? reply.outcome : 'no_pending_input';
  // The run is not waiting for it just now (its process restarting, its journal replaying): its
  // host may keep the answer to a question the run asked and nobody answered yet.
  if (mayKeep(outcome) && message.question_id && (await keepAnswer(deps, sessionId, message.question_id, answer))) outcome = 'answered';
  if (mayKeep(outcome) && parked) {
    const taken = await parked(message.question_id, answer);
    if (taken !== 'not_parked') return taken;
  }
  return answerRefusal(outcome, reply, message.question_id);
}
