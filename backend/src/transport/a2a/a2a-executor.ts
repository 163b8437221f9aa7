import { randomUUID } from 'node:crypto';
import type { AgentCard, Message, Part, Task, TaskState } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext, User } from '@a2a-js/sdk/server';
import { type ClientMessage, ChatMessage, type StrategyInfo } from '@stepwise/shared-types';
import type { MessageSender } from '../../chat/chat-service.ts';
import type { ConnectionHandler } from '../../chat/connection-handler.ts';
import { SESSION_ID } from '../../chat/session-manager.ts';
import type { Logger } from '../../logger.ts';
import type { CallerTraces } from '../../tracing/run-tracing.ts';
import { FollowedChat, type RunOutcome } from '../followed-chat.ts';
import { questionText, stepInWords } from '../run-in-words.ts';

/*
 * The A2A SDK is loaded only at the first A2A request, so this file takes nothing but its types:
 * its enums' values are written here as the numbers the protocol gives them.
 */
const STATE = { submitted: 1, working: 2, completed: 3, failed: 4, canceled: 5, inputRequired: 6 } as const satisfies Record<string, TaskState>;
const ROLE_AGENT = 2;

/** The caller of an A2A request, as the A2A SDK sees it (its user name scopes its tasks) and as Stepwise does. */
export class A2aCaller implements User {
  constructor(
    readonly sender: MessageSender,
    /** The request's headers (its traceparent, if any). */
    readonly headers: Record<string, string | string[] | undefined> = {},
  ) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.sender.user?.id ?? 'local';
  }
}

/** The agent card: one skill per strategy; JSON-RPC at `url` (A2A 1.0, and 0.3 method names). */
export function agentCard(url: string, strategies: StrategyInfo[], version: string, bearer: boolean): AgentCard {
  return {
    name: 'Stepwise',
    description: 'A self-hosted agent that works in the open: every step (reason, tool calls, observe) of a run, with the strategy the skill names.',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: bearer
      ? {
          bearer: {
            scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'AUTH_TOKEN, or an OIDC access token', scheme: 'Bearer', bearerFormat: '' } },
          },
        }
      : {},
    securityRequirements: bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: strategies.map((strategy) => ({
      id: strategy.name,
      name: strategy.label,
      description: strategy.description,
      tags: ['agent', strategy.name],
      examples: [],
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

/**
 * A2A tasks as Stepwise runs: a message that starts a task starts a run in a chat (the task's
 * `contextId` when it is a chat id, else a new chat) with the strategy its metadata names; the
 * run's steps stream as `working` status updates; a question makes the task `input-required`
 * (the question in words, its id, kind and choices in the status message's metadata), and the
 * next message on the task answers it; the answer is the task's artifact. docs/PROTOCOL.md, "A2A".
 */
export class StepwiseA2aExecutor implements AgentExecutor {
  /** Tasks a request is following the run of just now. */
  private readonly following = new Set<string>();
  /** The contexts of tasks being canceled here (stop, then cancelTask), by task id. */
  private readonly canceling = new Map<string, string>();

  constructor(
    private readonly handler: ConnectionHandler,
    private readonly logger: Logger,
    private readonly callers: CallerTraces,
  ) {}

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request;
    const caller = request.context.user as A2aCaller | undefined;
    const sender = caller?.sender ?? {};
    // A task's chat is in the task as stored (after a restart, on any instance), else made now.
    const chatId = chatIdOf(request.task) ?? (SESSION_ID.test(contextId) ? contextId : randomUUID());
    const status = (state: TaskState, text?: string, metadata?: Record<string, unknown>) =>
      bus.publish({
        kind: 'statusUpdate',
        data: {
          taskId,
          contextId,
          status: { state, message: text ? agentMessage(taskId, contextId, text, metadata) : undefined, timestamp: now() },
          metadata: {},
        },
      });
    const followed = await FollowedChat.open(this.handler, chatId, sender);
    if (!followed) {
      status(STATE.failed, `No chat ${chatId}`);
      return bus.finished();
    }
    this.following.add(taskId);
    try {
      if (!request.task)
        bus.publish({
          kind: 'task',
          data: {
            id: taskId,
            contextId,
            status: { state: STATE.submitted, message: undefined, timestamp: now() },
            artifacts: [],
            history: [request.userMessage],
            metadata: { chat_id: chatId },
          },
        });
      if (caller && !request.task) this.callers.acceptCaller(chatId, caller.headers);
      // The run a task waits on may run on another instance: the task says which it is.
      followed.runId ??= waitingOf(request.task)?.runId;
      const refused = await followed.handle(messageOf(request, followed));
      if (refused) {
        // A task that still waits keeps saying on what (the question, its run), for the next message.
        const asked = waitingOf(request.task) ? request.task?.status?.message?.metadata : {};
        status(request.task ? STATE.inputRequired : STATE.failed, `${refused.code}: ${refused.message}`, { ...asked, error: refused.code });
        return bus.finished();
      }
      status(STATE.working);
      followed.onEvent = (event) => {
        const line = stepInWords(event);
        if (line) status(STATE.working, line);
      };
      const pause = await followed.next();
      if (pause.kind === 'question') {
        const { question } = pause;
        status(STATE.inputRequired, questionText(question), {
          question_id: question.question_id,
          run_id: question.run_id,
          kind: question.kind ?? 'question',
          ...(question.choices ? { choices: question.choices } : {}),
        });
        return bus.finished();
      }
      this.ended(taskId, contextId, pause.outcome, bus);
    } finally {
      this.following.delete(taskId);
      followed.release();
    }
  }

  /** Stops the run of a task (a canceled task's run, whether it runs or waits on a question, here or elsewhere). */
  async stop(task: Task, caller: A2aCaller | undefined): Promise<void> {
    const chatId = chatIdOf(task);
    this.canceling.set(task.id, task.contextId);
    if (!chatId) return;
    const followed = await FollowedChat.open(this.handler, chatId, caller?.sender ?? {});
    if (!followed) return;
    try {
      const refused = await followed.handle({ type: 'agent_control', action: 'stop' });
      if (!refused) this.logger.info({ chat_id: chatId, task_id: task.id }, 'A2A task canceled: its run stops');
    } finally {
      followed.release();
    }
  }

  /**
   * The run's stop is sent by `stop` before the SDK asks for this: a request following the run
   * ends the task when the run ends; a task waiting for input, which nothing follows, ends here.
   */
  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    if (this.following.has(taskId)) return;
    const contextId = this.canceling.get(taskId) ?? '';
    bus.publish({
      kind: 'statusUpdate',
      data: {
        taskId,
        contextId,
        status: { state: STATE.canceled, message: agentMessage(taskId, contextId, 'Canceled: the run stopped.'), timestamp: now() },
        metadata: {},
      },
    });
    bus.finished();
  }

  /** A cancellation is over (whether the SDK asked for cancelTask here or, the task's request elsewhere, marked it itself). */
  canceled(taskId: string): void {
    this.canceling.delete(taskId);
  }

  private ended(taskId: string, contextId: string, outcome: RunOutcome, bus: ExecutionEventBus): void {
    if (outcome.answer)
      bus.publish({
        kind: 'artifactUpdate',
        data: {
          taskId,
          contextId,
          artifact: {
            artifactId: randomUUID(),
            name: 'answer',
            description: 'The run’s final answer',
            parts: [textPart(outcome.answer)],
            metadata: {},
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: {},
        },
      });
    const state = outcome.status === 'completed' ? STATE.completed : outcome.status === 'stopped' ? STATE.canceled : STATE.failed;
    const text = outcome.answer || outcome.error || `The run ended (${outcome.ending}).`;
    bus.publish({
      kind: 'statusUpdate',
      data: {
        taskId,
        contextId,
        status: { state, message: agentMessage(taskId, contextId, text, { run_id: outcome.runId, ending: outcome.ending }), timestamp: now() },
        metadata: {},
      },
    });
    bus.finished();
  }
}

/** The message a request sends: the answer to the question its task's run waits on, or a chat message that starts a run. */
function messageOf(request: RequestContext, followed: FollowedChat): ClientMessage {
  const text = request.userMessage.parts
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('\n')
    .trim();
  // The question the run waits on here, or (its run elsewhere, or not yet back after a restart) the one the task asked.
  const waiting = followed.pendingQuestionIds[0] ?? waitingOf(request.task)?.questionId;
  if (request.task && waiting) return { type: 'agent_user_input', question_id: waiting, content: text };
  const settings = { ...request.request.metadata, ...request.userMessage.metadata } as Record<string, unknown>;
  const parsed = ChatMessage.safeParse({
    type: 'chat',
    content: text,
    agent_mode: true,
    ...(typeof settings.strategy === 'string' ? { strategy: settings.strategy } : {}),
    ...(settings.strategy_options ? { strategy_options: settings.strategy_options } : {}),
    ...(settings.max_steps ? { agent_max_steps: settings.max_steps } : {}),
    ...(settings.tools ? { tools: settings.tools } : {}),
  });
  // An invalid message is sent as it is, so the chat refuses it with its typed error.
  return parsed.success ? parsed.data : ({ type: 'chat', content: text, agent_mode: true, ...settings } as ClientMessage);
}

/** The chat a task's run is in, as the task keeps it. */
function chatIdOf(task: Task | undefined): string | undefined {
  const chatId = task?.metadata?.chat_id;
  return typeof chatId === 'string' && SESSION_ID.test(chatId) ? chatId : undefined;
}

/** The question an input-required task waits on, and its run, as its status says. */
function waitingOf(task: Task | undefined): { questionId: string; runId: string | undefined } | undefined {
  if (task?.status?.state !== STATE.inputRequired) return undefined;
  const metadata = task.status.message?.metadata ?? {};
  if (typeof metadata.question_id !== 'string') return undefined;
  return { questionId: metadata.question_id, runId: typeof metadata.run_id === 'string' ? metadata.run_id : undefined };
}

function agentMessage(taskId: string, contextId: string, text: string, metadata: Record<string, unknown> = {}): Message {
  return { messageId: randomUUID(), contextId, taskId, role: ROLE_AGENT, parts: [textPart(text)], metadata, extensions: [], referenceTaskIds: [] };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: {}, filename: '', mediaType: 'text/plain' };
}

const now = () => new Date().toISOString();
