import { randomUUID } from 'node:crypto';
import { type CancelMessageMessage, type ChatMessage, ChatMessage as ChatMessageSchema, type ErrorEvent, type PendingMessage } from '@stepwise/shared-types';
import type { User } from '../auth/user.ts';
import type { ControlCommand, ControlOutcome } from '../agent/kernel/control-bus.ts';
import type { Steer } from '../agent/kernel/steering.ts';
import type { WaitingMessage } from '../store/waiting-messages.ts';
import type { ChatDependencies } from './chat-dependencies.ts';
import { chatRequest } from './chat-request.ts';
import { reject } from './run-commands.ts';
import type { SessionEventLog } from './session-event-log.ts';
import { PLAIN_CHAT } from './session-runs.ts';

/** Who sent a message: the client (user or address) and user, whose shares of the run slots a new run takes. */
export interface MessageSender {
  /** The client's share of the run slots: its user's when users sign in, else its address's. */
  client?: string | undefined;
  /** The user (multi-user modes): counted against MAX_RUNS_PER_USER, and named as `by` on what they do to a run. */
  user?: User | undefined;
}

/** Sends a command to the session's run, wherever it executes. */
type SendCommand = (command: ControlCommand) => Promise<ControlOutcome>;

/**
 * The messages a person sends while the session's run is going: each is checked, stored, and only
 * then acknowledged (`message_queued`), so none is lost. A steer (or an interrupt) goes to the run,
 * which reads it before its next model call; a queued one waits for the run to end and starts the
 * next. The store is where they wait: a run that goes on elsewhere or after a restart finds there
 * what it has not read, and a message is read, started or withdrawn once.
 */
export class SessionMessages<Sender = unknown> {
  /** Who sent the queued messages sent here (their run counts against them when it starts). */
  private readonly senders = new Map<string, Sender>();

  constructor(
    private readonly sessionId: string,
    private readonly log: SessionEventLog,
    private readonly deps: Pick<ChatDependencies, 'config' | 'tools' | 'kernel' | 'store' | 'logger'>,
  ) {}

  /** Takes a chat message sent while a run goes (`plain`: a plain chat answer, which takes no steers: the message is queued). */
  async send(message: ChatMessage, plain: boolean, sendCommand: SendCommand, sender: Sender): Promise<ErrorEvent | undefined> {
    const { steerMaxChars, steerQueueMax } = this.deps.config.agent;
    if (message.content.length > steerMaxChars) {
      return reject(
        'message_too_long',
        `A message sent during a run may be ${steerMaxChars} characters long (STEER_MAX_CHARS); this one is ${message.content.length}. The run goes on.`,
      );
    }
    // Checked now, as if it started a run: a queued message (or a steer the run ends without reading) may start one.
    const checked = chatRequest(message, this.deps);
    if ('error' in checked) return checked.error;
    const delivery = plain ? 'queue' : (message.delivery ?? 'steer');
    const id = randomUUID();
    const nodeId = delivery === 'queue' ? undefined : message.node_id;
    const position = await this.deps.store.waiting.add(
      { id, sessionId: this.sessionId, delivery, content: message.content, nodeId, chat: JSON.stringify({ ...message, delivery }) },
      steerQueueMax,
    );
    if (position === undefined) {
      return reject(
        'queue_full',
        `${steerQueueMax} messages wait for this run already (STEER_QUEUE_MAX); wait until it reads them, or cancel one. The run goes on.`,
      );
    }
    if (delivery === 'queue') this.senders.set(id, sender);
    else {
      const steer: Steer = { id, content: message.content, delivery, ...(nodeId ? { nodeId } : {}) };
      // Stored first: a run that does not take it now (restarting, handed over) reads it from the store when it goes on.
      await sendCommand({ type: 'steer', steer }).catch((error: unknown) =>
        this.deps.logger.warn(
          { err: error, session_id: this.sessionId, message_id: id },
          'a message for a run could not reach it now; it reads it when it goes on',
        ),
      );
    }
    this.log.broadcast({ type: 'message_queued', message_id: id, delivery, position, content: message.content, ...(nodeId ? { node_id: nodeId } : {}) });
    return undefined;
  }

  /** Withdraws a message the run has not read (nor started from): `message_cancelled` to every client. */
  async cancel(message: CancelMessageMessage, sendCommand: SendCommand): Promise<ErrorEvent | undefined> {
    const id = message.message_id;
    const reply = await sendCommand({ type: 'cancel', messageId: id });
    const outcome = reply.type === 'cancel' ? reply.outcome : 'no_active_run';
    // Read by the run already (its journal holds it, the store may not say so yet): too late.
    const withdrawn = outcome !== 'read' && (await this.deps.store.waiting.settle(id, 'cancelled'));
    if (!withdrawn && outcome !== 'cancelled')
      return reject('unknown_message', `No waiting message "${id.slice(0, 100)}" in this chat (it was read, cancelled, or never sent)`);
    this.log.broadcast({ type: 'message_cancelled', message_id: id });
    return undefined;
  }

  /** The session's run when it goes on another instance, as far as the store knows (`plain`: a plain chat answer). */
  async runningElsewhere(): Promise<{ plain: boolean } | undefined> {
    const run = await this.deps.store.lastRun(this.sessionId);
    return run?.status === 'running' ? { plain: run.strategy === PLAIN_CHAT } : undefined;
  }

  /** What waits in the session now, for a client that joins. */
  async pending(): Promise<PendingMessage[]> {
    const waiting = await this.deps.store.waiting.waiting(this.sessionId);
    return waiting.map((message, index) => ({
      message_id: message.id,
      delivery: message.delivery,
      position: index + 1,
      content: message.content,
      ...(message.nodeId ? { node_id: message.nodeId } : {}),
    }));
  }

  /** The steers waiting for the session's run, for a run that begins (or goes on) to read. */
  async steers(): Promise<Steer[]> {
    const waiting = await this.deps.store.waiting.waiting(this.sessionId);
    return waiting.filter((message) => message.delivery !== 'queue').map(steerOf);
  }

  /** The run read these: they wait no more. */
  async read(ids: string[]): Promise<void> {
    for (const id of ids) await this.deps.store.waiting.settle(id, 'applied');
  }

  /**
   * The run ended: the oldest waiting message starts the next one (a queued message, or a steer the
   * run ended without reading), taken once whichever instance asks. `withdrawSteers`: a person
   * stopped the run, so what it did not read is withdrawn, not run.
   */
  async next(withdrawSteers: boolean): Promise<{ id: string; message: ChatMessage; sender: Sender | undefined } | undefined> {
    for (const waiting of await this.deps.store.waiting.waiting(this.sessionId)) {
      if (withdrawSteers && waiting.delivery !== 'queue') {
        if (await this.deps.store.waiting.settle(waiting.id, 'cancelled')) this.log.broadcast({ type: 'message_cancelled', message_id: waiting.id });
        continue;
      }
      const parsed = ChatMessageSchema.safeParse(JSON.parse(waiting.chat ?? 'null'));
      if (!parsed.success) {
        this.deps.logger.warn({ session_id: this.sessionId, message_id: waiting.id }, 'a waiting message could not be read; it is withdrawn');
        await this.deps.store.waiting.settle(waiting.id, 'cancelled');
        this.log.broadcast({ type: 'message_cancelled', message_id: waiting.id });
        continue;
      }
      const sender = this.senders.get(waiting.id);
      this.senders.delete(waiting.id);
      if (await this.deps.store.waiting.settle(waiting.id, 'started')) return { id: waiting.id, message: parsed.data, sender };
    }
    return undefined;
  }
}

function steerOf(message: WaitingMessage): Steer {
  return {
    id: message.id,
    content: message.content,
    delivery: message.delivery === 'interrupt' ? 'interrupt' : 'steer',
    ...(message.nodeId ? { nodeId: message.nodeId } : {}),
  };
}
