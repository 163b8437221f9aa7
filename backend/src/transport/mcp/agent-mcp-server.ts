import { randomUUID } from 'node:crypto';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ElicitRequestFormParams, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { type AgentRequestInput, type ClientMessage, ChatMessage, type ServerEvent, type StrategyInfo } from '@stepwise/shared-types';
import { z } from 'zod';
import type { MessageSender } from '../../chat/chat-service.ts';
import type { HistoryService } from '../../chat/history-service.ts';
import type { ConnectionHandler } from '../../chat/connection-handler.ts';
import { LOCAL_USER } from '../../auth/user.ts';
import type { Logger } from '../../logger.ts';
import type { CallerTraces } from '../../tracing/run-tracing.ts';
import { FollowedChat, type RunOutcome } from '../followed-chat.ts';
import { questionText, stepInWords } from '../run-in-words.ts';

/** What the MCP server needs of the app: the connection handler (it opens the chats), the chats' history, the strategies. */
export interface AgentMcpDependencies {
  handler: ConnectionHandler;
  history: HistoryService;
  catalog: () => StrategyInfo[];
  logger: Logger;
  version: string;
  /** Where the caller's traceparent goes: the run it starts links to it. */
  callers: CallerTraces;
}

/** The MCP SDK's server classes, loaded by the route at its first request (never at start). */
export type McpServerSdk = typeof import('@modelcontextprotocol/sdk/server/mcp.js');

/** How often a refused answer is asked again before the run is stopped. */
const ASKS_PER_QUESTION = 3;
/** The URI template of a chat as an MCP resource. */
const CHAT_URI = 'stepwise://chats/{chat_id}';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * Stepwise as an MCP server, for one MCP session of one caller: the tool `run_agent` runs an agent
 * run (any strategy) in a chat and returns its answer, with a progress notification per step; a
 * question or an approval becomes an elicitation to the caller; the caller's cancellation stops the
 * run. The caller's chats are resources (`stepwise://chats/{chat_id}`). docs/PROTOCOL.md, "MCP".
 */
export function agentMcpServer(sdk: McpServerSdk, deps: AgentMcpDependencies, sender: MessageSender): McpServer {
  const { McpServer, ResourceTemplate } = sdk;
  const server = new McpServer({ name: 'stepwise', version: deps.version }, { capabilities: { logging: {} } });
  const strategies = deps.catalog();
  const names = strategies.map((strategy) => strategy.name);
  server.registerTool(
    'run_agent',
    {
      title: 'Run a Stepwise agent',
      description:
        'Runs an agent run to its answer and returns it. Strategies: ' +
        strategies.map((strategy) => `${strategy.name} (${strategy.description})`).join('; ') +
        '. Give chat_id to go on in an earlier chat; while that chat waits on a question, prompt answers it.',
      inputSchema: {
        prompt: z.string().min(1).max(100_000).describe('The request (or the answer to the question the chat waits on)'),
        strategy: z
          .enum(names as [string, ...string[]])
          .optional()
          .describe('The agent strategy (default roa)'),
        strategy_options: z.record(z.string(), z.unknown()).optional().describe('The strategy’s options (see its options schema)'),
        max_steps: z.number().int().min(1).optional().describe('The run’s iteration budget'),
        tools: z.array(z.string().min(1).max(200)).max(200).optional().describe('Stepwise tool names to enable'),
        chat_id: z.uuid().optional().describe('A chat to go on in (a new one when left out)'),
      },
      outputSchema: {
        answer: z.string(),
        chat_id: z.string(),
        run_id: z.string().optional(),
        status: z.enum(['completed', 'stopped', 'failed', 'waiting']),
        ending: z.string(),
      },
      annotations: { openWorldHint: true },
    },
    (input, extra) => runAgent(server, deps, sender, input, extra),
  );
  server.registerResource(
    'chat',
    new ResourceTemplate(CHAT_URI, {
      list: async () => ({
        resources: (await deps.history.list(sender.user ?? LOCAL_USER)).map((chat) => ({
          uri: `stepwise://chats/${chat.id}`,
          name: chat.title ?? chat.id,
          mimeType: 'application/json',
        })),
      }),
    }),
    { title: 'Stepwise chats', description: 'Your chats: messages and runs', mimeType: 'application/json' },
    async (uri, variables) => {
      const detail = await deps.history.get(String(variables.chat_id), sender.user ?? LOCAL_USER);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(detail) }] };
    },
  );
  return server;
}

type RunAgentInput = {
  prompt: string;
  strategy?: string | undefined;
  strategy_options?: Record<string, unknown> | undefined;
  max_steps?: number | undefined;
  tools?: string[] | undefined;
  chat_id?: string | undefined;
};

async function runAgent(server: McpServer, deps: AgentMcpDependencies, sender: MessageSender, input: RunAgentInput, extra: Extra): Promise<CallToolResult> {
  const chatId = input.chat_id ?? randomUUID();
  const followed = await FollowedChat.open(deps.handler, chatId, sender);
  if (!followed) return failure(`No chat ${chatId}`);
  const stop = () => void followed.handle({ type: 'agent_control', action: 'stop' });
  try {
    const message = firstMessage(followed, input);
    if ('error' in message) return failure(message.error);
    if (message.type === 'chat' && extra.requestInfo) deps.callers.acceptCaller(chatId, extra.requestInfo.headers);
    const refused = await followed.handle(message);
    if (refused) return failure(`${refused.code}: ${refused.message}`);
    followed.onEvent = progressReporter(extra);
    extra.signal.addEventListener('abort', stop, { once: true });
    for (;;) {
      const pause = await followed.next();
      if (pause.kind === 'ended') {
        if (extra.signal.aborted)
          deps.logger.info({ chat_id: chatId, run_id: pause.outcome.runId, receipt: pause.outcome.receipt ?? [] }, 'MCP caller cancelled the run: stopped');
        return result(chatId, pause.outcome);
      }
      if (extra.signal.aborted) continue;
      // A caller that takes no elicitation gets the question; the next run_agent in this chat answers it.
      if (!server.server.getClientCapabilities()?.elicitation) return waiting(chatId, followed.runId, pause.question);
      const answered = await askCaller(server, pause.question, followed, extra);
      if (!answered) stop();
    }
  } finally {
    extra.signal.removeEventListener('abort', stop);
    followed.release();
  }
}

/** The message a call sends: the answer to the question the chat waits on, or a chat message that starts a run. */
function firstMessage(followed: FollowedChat, input: RunAgentInput): ClientMessage | { error: string } {
  const waiting = followed.pendingQuestionIds[0];
  if (waiting) return { type: 'agent_user_input', question_id: waiting, content: input.prompt };
  const parsed = ChatMessage.safeParse({
    type: 'chat',
    content: input.prompt,
    agent_mode: true,
    ...(input.strategy ? { strategy: input.strategy } : {}),
    ...(input.strategy_options ? { strategy_options: input.strategy_options } : {}),
    ...(input.max_steps ? { agent_max_steps: input.max_steps } : {}),
    ...(input.tools ? { tools: input.tools } : {}),
  });
  return parsed.success ? parsed.data : { error: `The request: ${parsed.error.issues[0]!.message}` };
}

/**
 * Asks the caller a question by elicitation and sends the answer to the run; an answer the run
 * refuses is asked again with the reason. False when the caller declined or cancelled.
 */
async function askCaller(server: McpServer, question: AgentRequestInput, followed: FollowedChat, extra: Extra): Promise<boolean> {
  let note = '';
  for (let ask = 0; ask < ASKS_PER_QUESTION; ask++) {
    const reply = await server.server.elicitInput(
      { message: note + questionText(question), requestedSchema: answerSchema(question) },
      {
        relatedRequestId: extra.requestId,
        signal: extra.signal,
        timeout: question.deadline ? Math.max(1_000, Date.parse(question.deadline) - Date.now()) : 24 * 3_600_000,
      },
    );
    const content = reply.content ?? {};
    if (reply.action !== 'accept') {
      if (question.kind !== 'approval') return false;
      // A declined approval is a denial.
      Object.assign(content, { decision: 'deny', reason: 'declined' });
    }
    const message: ClientMessage =
      question.kind === 'approval'
        ? {
            type: 'agent_user_input',
            question_id: question.question_id,
            approval: {
              decision: content.decision === 'approve' ? 'approve' : 'deny',
              ...(typeof content.reason === 'string' && content.reason ? { reason: content.reason } : {}),
            },
          }
        : { type: 'agent_user_input', question_id: question.question_id, content: String(content.answer ?? '') };
    const refused = await followed.handle(message);
    if (!refused || refused.code === 'no_pending_input') return true;
    note = `${refused.message}\n\n`;
  }
  return false;
}

/** The form a question asks for: an answer (one of its choices, when it has some), or an approval's decision. */
function answerSchema(question: AgentRequestInput): ElicitRequestFormParams['requestedSchema'] {
  if (question.kind === 'approval')
    return {
      type: 'object',
      properties: {
        decision: { type: 'string', title: 'Decision', enum: ['approve', 'deny'] },
        reason: { type: 'string', title: 'Why it is denied' },
      },
      required: ['decision'],
    };
  return {
    type: 'object',
    properties: { answer: question.choices?.length ? { type: 'string', title: 'Answer', enum: question.choices } : { type: 'string', title: 'Answer' } },
    required: ['answer'],
  };
}

/** A progress notification per step (turn, plan step, stage, task) and per tool call, when the caller asked for progress. */
function progressReporter(extra: Extra): (event: ServerEvent) => void {
  const token = extra._meta?.progressToken;
  let progress = 0;
  return (event) => {
    const message = progressLine(event);
    if (token === undefined || !message) return;
    void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++progress, message } }).catch(() => undefined);
  };
}

function progressLine(event: ServerEvent): string | undefined {
  return event.type === 'tool_start' ? `Tool ${event.tool_name}` : stepInWords(event);
}

function result(chatId: string, outcome: RunOutcome): CallToolResult {
  const text = outcome.answer || outcome.error || `The run ended (${outcome.status}: ${outcome.ending}) with no answer.`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: {
      answer: outcome.answer,
      chat_id: chatId,
      ...(outcome.runId ? { run_id: outcome.runId } : {}),
      status: outcome.status,
      ending: outcome.ending,
    },
    ...(outcome.status === 'failed' ? { isError: true } : {}),
  };
}

function waiting(chatId: string, runId: string | undefined, question: AgentRequestInput): CallToolResult {
  const text = `${questionText(question)}\n\n(The run waits: call run_agent with chat_id "${chatId}" and the answer as prompt.)`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { answer: '', chat_id: chatId, ...(runId ? { run_id: runId } : {}), status: 'waiting', ending: 'question' },
  };
}

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
