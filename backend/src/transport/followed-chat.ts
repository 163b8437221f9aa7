import type { AgentRequestInput, AgentStopped, ClientMessage, ErrorEvent, ServerEvent } from '@stepwise/shared-types';
import type { MessageSender } from '../chat/chat-service.ts';
import type { ClientConnection } from '../chat/client-connection.ts';
import type { ChatHold, ConnectionHandler } from '../chat/connection-handler.ts';

/** How a run ended, as a client that asked for it reads it. */
export interface RunOutcome {
  runId: string | undefined;
  /** `completed`, `stopped` or `failed`. */
  status: 'completed' | 'stopped' | 'failed';
  /** The completion reason (`answered`, `max_steps`, …), the stop reason, or `failed`. */
  ending: string;
  /** The final answer (empty when the run gave none). */
  answer: string;
  /** Why it failed, for a failed run. */
  error?: string;
  /** A stopped run's receipt: each call of the step in progress and what became of it. */
  receipt?: AgentStopped['calls'];
}

/** Where a followed run paused: at a question (it waits), or at its end. */
export type RunPause = { kind: 'question'; question: AgentRequestInput } | { kind: 'ended'; outcome: RunOutcome };

/**
 * One chat as a request-scoped client follows it (MCP's run_agent, an A2A task): a connection the
 * connection handler opens, as it opens the socket's and AG-UI's, with the run's live events read
 * until its next question or its end. Open it, send a message, `next()` until it ends, close.
 */
export class FollowedChat implements ClientConnection {
  /** The run being followed (learned from its agent_start, or named when joining a waiting one). */
  runId: string | undefined;
  /** Called with every live event of the followed run (progress, streaming). */
  onEvent: (event: ServerEvent) => void = () => undefined;
  private closedFlag = false;
  private answer = '';
  private readonly pauses: RunPause[] = [];
  private wake: (() => void) | undefined;

  /** The handler's hold on the chat, once it is open. */
  private held: ChatHold | undefined;

  private constructor() {}

  /** Opens chat `chatId` (created when new) for its owner, through the connection handler; undefined when it is someone else's. */
  static async open(handler: ConnectionHandler, chatId: string, sender: MessageSender): Promise<FollowedChat | undefined> {
    const followed = new FollowedChat();
    const hold = await handler.openThread(followed, { sessionId: chatId, client: sender.client, user: sender.user });
    if (!hold) return undefined;
    followed.held = hold;
    await hold.attach(hold.chat.log.lastSeq);
    return followed;
  }

  private get hold(): ChatHold {
    return this.held!;
  }

  get chatId(): string {
    return this.hold.chat.sessionId;
  }

  /** The ids of the questions the chat's run waits on now, oldest first. */
  get pendingQuestionIds(): string[] {
    return this.hold.chat.pendingQuestionIds;
  }

  /** The chat's run in progress here, if any. */
  get activeRunId(): string | undefined {
    return this.hold.chat.activeRunId;
  }

  /** Sends one client message (a chat message, an answer, a stop) as this client's; the refusal, if any. */
  handle(message: ClientMessage): Promise<ErrorEvent | undefined> {
    if (message.type !== 'chat' && !this.runId) this.runId = this.hold.chat.activeRunId;
    return this.hold.handle(message);
  }

  /** Resolves at the followed run's next question, or its end (a closed connection ends it as failed). */
  async next(): Promise<RunPause> {
    while (this.pauses.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.pauses.shift()!;
  }

  /** Lets go of the chat (the run goes on, as after a dropped socket). */
  release(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.hold.release();
  }

  get congested(): boolean {
    return false;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  whenDrained(): Promise<void> {
    return Promise.resolve();
  }

  close(_code: number, reason: string): void {
    this.pause({ kind: 'ended', outcome: { runId: this.runId, status: 'failed', ending: 'failed', answer: '', error: reason } });
    this.release();
  }

  send(event: ServerEvent): void {
    if (this.closedFlag || !('seq' in event)) return;
    const runId = 'run_id' in event ? event.run_id : undefined;
    if (!this.runId && event.type === 'agent_update' && event.update_type === 'agent_start') this.runId = event.run_id;
    if (!this.runId || runId !== this.runId) return;
    this.onEvent(event);
    this.read(event);
  }

  private ending: Omit<RunOutcome, 'runId' | 'answer'> | undefined;

  private read(event: ServerEvent): void {
    switch (event.type) {
      case 'assistant_message':
        this.answer = event.content;
        return;
      case 'response_complete':
        this.pause({
          kind: 'ended',
          outcome: { runId: this.runId, answer: this.answer, ...(this.ending ?? { status: 'completed', ending: 'answered' }) },
        });
        return;
      case 'agent_update':
        break;
      default:
        return;
    }
    switch (event.update_type) {
      case 'agent_request_input':
        this.pause({ kind: 'question', question: event });
        return;
      case 'agent_completion':
        this.ending = { status: 'completed', ending: event.reason ?? 'answered' };
        return;
      case 'agent_stopped':
        this.ending = { status: 'stopped', ending: event.reason ?? 'user', ...(event.calls ? { receipt: event.calls } : {}) };
        return;
      case 'agent_error':
        this.ending = { status: 'failed', ending: 'failed', error: event.message };
        return;
      default:
        return;
    }
  }

  private pause(pause: RunPause): void {
    this.pauses.push(pause);
    this.wake?.();
    this.wake = undefined;
  }
}
