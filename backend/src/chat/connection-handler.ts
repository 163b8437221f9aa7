import { CLIENT_MESSAGE_TYPES, ClientMessage, type ErrorCode, type ErrorEvent, type SessionEvent, type SettingsChangedEvent } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import { RunKernel } from '../agent/kernel/run-kernel.ts';
import type { Config } from '../config/config.ts';
import { settingsInForce } from '../config/settings-in-force.ts';
import { ModelHealthMonitor } from '../llm/model-health.ts';
import type { LlmClient } from '../llm/llm-client.ts';
import type { Logger } from '../logger.ts';
import { TOKENS } from '../tokens.ts';
import { ToolRegistry } from '../tools/tool-registry.ts';
import { McpManager } from '../mcp/mcp-manager.ts';
import type { ChatService, MessageSender } from './chat-service.ts';
import type { ClientConnection } from './client-connection.ts';
import { RateLimiter, RateLimiters } from '../limits/rate-limiter.ts';
import { type ChatAccess, LOCAL_USER, ownerLabel, type User } from '../auth/user.ts';
import { SessionManager } from './session-manager.ts';

/** What a transport passes on about a new connection. */
export interface ConnectionRequest {
  sessionId?: string | undefined;
  afterSeq?: string | undefined;
  /** The client (its user when users sign in, else its address): its runs count against its share of the server's run slots. */
  client?: string | undefined;
  /** Who the client is (the access check said): they see and drive only their own sessions. */
  user?: User | undefined;
}

/**
 * One client's hold on a chat, whatever its transport: where it joins the chat's log, the messages
 * it sends (an admin watching another's chat may stop its run, and nothing else), and letting go.
 */
export interface ChatHold {
  readonly chat: ChatService;
  /** Sends the chat's log after `afterSeq` to the connection, then every event as it is logged. */
  attach(afterSeq: number): Promise<void>;
  /** Handles one client message as this client's; the refusal, if any (nothing is sent for it). */
  handle(message: ClientMessage): Promise<ErrorEvent | undefined>;
  /** Detaches the connection and lets go of the chat (a run goes on, as after a dropped socket); once. */
  release(): void;
}

/** The core's side of one connection that sends frames (the socket): the transport feeds it each one. */
export interface ConnectionSession extends ChatHold {
  onText(text: string): void;
  onBinary(): void;
}

const error = (code: ErrorCode, message: string): ErrorEvent => ({ type: 'error', code, message });

/** The connection of a client that hears nothing (a REST call): what it is sent goes nowhere. */
const NO_ONE: ClientConnection = {
  send: () => undefined,
  congested: false,
  closed: true,
  whenDrained: () => Promise.resolve(),
  close: () => undefined,
};

/**
 * Every transport's way into a chat, written once: a transport adapts its connection to
 * ClientConnection (a socket, an AG-UI response) and hands it here, which opens the chat, applies
 * who may do what (an admin watching may only stop), attaches the connection to the chat's log,
 * handles the client's messages and lets go. A socket is also greeted and has its frames checked.
 */
@injectable()
export class ConnectionHandler {
  /** Messages a second per user, over all their sockets here (multi-user modes). */
  private readonly perUser: RateLimiters;

  constructor(
    @inject(TOKENS.Config) private readonly config: Config,
    @inject(SessionManager) private readonly sessions: SessionManager,
    @inject(TOKENS.LlmClient) private readonly llm: LlmClient,
    @inject(ToolRegistry) private readonly tools: ToolRegistry,
    @inject(TOKENS.Logger) private readonly logger: Logger,
    @inject(McpManager) private readonly mcp: McpManager,
    @inject(RunKernel) private readonly kernel: RunKernel,
    @inject(ModelHealthMonitor) private readonly health: ModelHealthMonitor,
  ) {
    this.perUser = new RateLimiters(config.quotas.messagesPerSecondPerUser);
    // Clients hear when servers come and go, so the tool picker stays true without a reload.
    let pending: NodeJS.Timeout | undefined;
    tools.onChange(() => {
      if (pending) return;
      pending = setTimeout(() => {
        pending = undefined;
        this.sessions.broadcast({ type: 'tools_changed', tools: this.tools.list(), mcp_servers: this.mcp.status() });
      }, 50);
      pending.unref();
    });
  }

  /** Tells every client the model and the limits now, after an admin changed the settings. */
  announceSettings(): void {
    this.sessions.broadcast({ type: 'settings_changed', ...this.modelAndLimits() });
  }

  /** What a client shows of the model and the limits (they change with the app's settings). */
  private modelAndLimits(): Omit<SettingsChangedEvent, 'type'> {
    return {
      model: this.llm.modelName,
      demo: this.llm.isDemo,
      limits: { max_steps_default: this.config.agent.maxStepsDefault, max_steps_limit: this.config.agent.maxStepsLimit },
      ...(this.health.endpoint ? { model_endpoint: this.health.endpoint } : {}),
      settings: settingsInForce(this.config),
    };
  }

  /** Opens the chat a socket names (a new one when it is unknown, or another user's), greets the client and replays the log. */
  async open(connection: ClientConnection, request: ConnectionRequest): Promise<ConnectionSession> {
    const user = request.user ?? LOCAL_USER;
    // Another user's session id is an unknown one: a new session of this user's starts.
    const { chat, resumed, access } = (await this.sessions.open(request.sessionId, { user }))!;
    connection.send(await this.greeting(chat, resumed, access));
    const session = this.hold(connection, chat, access, request);
    await session.attach(resumed ? parseAfterSeq(request.afterSeq) : 0);
    return session;
  }

  /**
   * Opens a chat its client names and drives (an AG-UI thread): made under that id when new; one
   * the user does not own is undefined (not found), never watched nor replaced by a new one. The
   * client is not greeted, and joins the log where it says (`attach`).
   */
  async openThread(connection: ClientConnection, request: ConnectionRequest): Promise<ChatHold | undefined> {
    const opened = await this.sessions.open(request.sessionId, { keepId: true, user: request.user ?? LOCAL_USER });
    if (opened?.access !== 'own') {
      if (opened) this.sessions.release(opened.chat);
      return undefined;
    }
    return this.hold(connection, opened.chat, opened.access, request);
  }

  /**
   * One message to a chat that exists, from a client that holds no connection (a REST call), under
   * the same rules as a socket's; undefined when the user has no such chat to see.
   */
  async command(request: ConnectionRequest, message: ClientMessage): Promise<{ refused: ErrorEvent | undefined } | undefined> {
    const opened = await this.sessions.open(request.sessionId, { user: request.user ?? LOCAL_USER });
    if (!opened?.resumed) {
      if (opened) this.sessions.release(opened.chat);
      return undefined;
    }
    const hold = this.hold(NO_ONE, opened.chat, opened.access, request);
    try {
      return { refused: await hold.handle(message) };
    } finally {
      hold.release();
    }
  }

  /** The `session` message a socket's client starts with. */
  private async greeting(chat: ChatService, resumed: boolean, access: Exclude<ChatAccess, 'none'>): Promise<SessionEvent> {
    const lastRun = resumed ? await this.sessions.lastAgentRun(chat.sessionId) : undefined;
    const pendingMessages = resumed && chat.written ? await chat.messages.pending() : [];
    return {
      type: 'session',
      session_id: chat.sessionId,
      protocol: 1,
      ...(access === 'watch' ? { read_only: true, owner: { id: chat.owner.id, name: ownerLabel(chat.owner) } } : {}),
      ...this.modelAndLimits(),
      resumed,
      last_seq: chat.log.lastSeq,
      tools: this.tools.list(),
      mcp_servers: this.mcp.status(),
      strategies: this.kernel.names,
      strategy_catalog: this.kernel.catalog(),
      model_health: this.health.current,
      config_file: this.config.configFile,
      ...(lastRun ? { last_run: lastRun } : {}),
      ...(this.config.traceUrlTemplate ? { trace_url_template: this.config.traceUrlTemplate } : {}),
      ...(pendingMessages.length ? { pending_messages: pendingMessages } : {}),
    };
  }

  /** One connection's hold on an open chat: attach, the read-only rule, handling, release, and frames. */
  private hold(connection: ClientConnection, chat: ChatService, access: Exclude<ChatAccess, 'none'>, request: ConnectionRequest): ConnectionSession {
    const user = request.user ?? LOCAL_USER;
    const sender: MessageSender = { client: request.client, user };
    let released = false;
    const limiter = new RateLimiter(this.config.limits.messagesPerSecond);
    const multiUser = this.config.auth.mode === 'oidc' || this.config.auth.mode === 'header';
    const refuseFlood = () => {
      if (!limiter.take()) {
        connection.send(error('rate_limited', `Too many messages: at most ${this.config.limits.messagesPerSecond} a second`));
        return true;
      }
      if (multiUser && !this.perUser.take(user.id)) {
        connection.send(error('rate_limited', `Too many messages: at most ${this.config.quotas.messagesPerSecondPerUser} a second from one user`));
        return true;
      }
      return false;
    };
    const handle = async (message: ClientMessage): Promise<ErrorEvent | undefined> => {
      // An admin watching another's chat may stop its run, and nothing else.
      if (access === 'watch' && !(message.type === 'agent_control' && message.action === 'stop')) {
        return error('read_only', `This chat is ${ownerLabel(chat.owner)}'s: an admin may watch it and stop its run, nothing more`);
      }
      return this.dispatch(chat, message, sender);
    };
    return {
      chat,
      attach: (afterSeq) => chat.log.attach(connection, afterSeq),
      handle,
      release: () => {
        if (released) return;
        released = true;
        chat.log.detach(connection);
        this.sessions.release(chat);
      },
      onText: (text) => {
        if (released || refuseFlood()) return;
        const parsed = parseClientMessage(text);
        if ('error' in parsed) {
          connection.send(parsed.error);
          return;
        }
        void handle(parsed.message).then((reply) => {
          if (reply && !released) connection.send(reply);
        });
      },
      onBinary: () => {
        if (!released && !refuseFlood()) connection.send(error('binary_not_supported', 'Messages must be JSON text frames'));
      },
    };
  }

  private async dispatch(chat: ChatService, message: ClientMessage, sender: MessageSender): Promise<ErrorEvent | undefined> {
    try {
      return await chat.handle(message, sender);
    } catch (failure) {
      this.logger.error({ err: failure, session_id: chat.sessionId }, 'message handling failed');
      return error('internal_error', 'Internal error');
    }
  }
}

/** Parses one text frame into a client message, or says exactly what is wrong with it. */
export function parseClientMessage(text: string): { message: ClientMessage } | { error: ErrorEvent } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { error: error('invalid_json', 'The message is not valid JSON') };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return { error: error('invalid_message', 'A message must be a JSON object with a "type"') };
  }
  const type = (data as { type?: unknown }).type;
  if (typeof type !== 'string') return { error: error('invalid_message', 'The message has no "type" string') };
  if (!(CLIENT_MESSAGE_TYPES as readonly string[]).includes(type)) {
    return {
      error: error('unknown_type', `Unknown message type "${type.slice(0, 100)}"; expected one of: ${CLIENT_MESSAGE_TYPES.join(', ')}`),
    };
  }
  const parsed = ClientMessage.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.length ? issue.path.join('.') : 'message';
    return { error: error('invalid_message', `Invalid "${type}" message: ${field}: ${issue.message}`) };
  }
  return { message: parsed.data };
}

function parseAfterSeq(value: string | undefined): number {
  const number = Number(value);
  return value !== undefined && Number.isSafeInteger(number) && number >= 0 ? number : 0;
}
