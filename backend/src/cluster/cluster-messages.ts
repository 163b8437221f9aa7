import { randomUUID } from 'node:crypto';
import type { DeltaEvent } from '@stepwise/shared-types';
import type { createClient } from 'redis';
import { type ControlBus, type ControlCommand, type ControlOutcome, noOutcome } from '../agent/kernel/control-bus.ts';
import type { LogFanOut, SessionListener, SessionNotice } from '../hosting/log-fan-out.ts';
import type { RunRouter } from '../hosting/run-router.ts';
import type { Logger } from '../logger.ts';
import { optionalPackage } from '../util/optional-package.ts';
import type { ClusterLease } from './cluster-lease.ts';

type RedisClient = ReturnType<typeof createClient>;

/** A preview on a session's channel: who sent it, the seq its sockets had then, the delta. */
interface PreviewMessage {
  from: string;
  afterSeq: number;
  delta: DeltaEvent;
}

interface InboxMessage {
  kind: 'control' | 'reply';
  requestId: string;
  replyTo?: string;
  runId?: string;
  payload: string;
}

const INBOX = (instanceId: string) => `stepwise:inbox:${instanceId}`;
const SESSION_CHANNEL = (sessionId: string) => `stepwise:session:${sessionId}`;
/** How often a followed session's log is looked at, besides the notices (one may be lost). */
const FOLLOW_LOOK_MS = 1_000;
/** How long a command sent to another instance may take, Redis reconnects included. */
const SEND_TIMEOUT_MS = 10_000;
const TRIM = { TRIM: { strategy: 'MAXLEN', strategyModifier: '~', threshold: 1000 } } as const;

/**
 * What travels between instances, through Redis: commands to the instance where a run executes (a
 * stream per instance, so a command survives the receiver's reconnect; a sender retries while
 * Redis itself is away), and "new events" notices and previews of a session's log (pub/sub;
 * followers also look at the database, so a lost notice delays nothing for long).
 */
export class ClusterMessages implements LogFanOut, RunRouter {
  private readonly redis: RedisClient;
  private readonly reader: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly waiting = new Map<string, (outcome: ControlOutcome) => void>();
  private readonly sessionListeners = new Map<string, Set<SessionListener>>();
  /** The looks of the sessions followed here (see follow). */
  private readonly looks = new Set<NodeJS.Timeout>();
  private lastInboxId = '0-0';
  private closed = false;

  constructor(
    redisUrl: string,
    private readonly instanceId: string,
    private readonly lease: ClusterLease,
    /** Where the runs executing here take their commands. */
    private readonly local: ControlBus,
    private readonly logger: Logger,
  ) {
    const reconnectStrategy = (retries: number) => Math.min(100 * 2 ** Math.min(retries, 5), 2_000);
    this.redis = optionalPackage<{ createClient: typeof createClient }>('redis').createClient({ url: redisUrl, socket: { reconnectStrategy } });
    this.reader = this.redis.duplicate();
    this.subscriber = this.redis.duplicate();
    for (const client of [this.redis, this.reader, this.subscriber])
      client.on('error', (error: Error) => this.logger.debug({ err: error.message }, 'redis connection error'));
  }

  async start(): Promise<void> {
    await Promise.all([this.redis.connect(), this.reader.connect(), this.subscriber.connect()]);
    void this.readInbox();
  }

  /** Tells the other instances that the session's log grew. */
  notify(sessionId: string): void {
    if (!this.redis.isReady) return; // followers look at the database meanwhile
    void this.redis.publish(SESSION_CHANNEL(sessionId), this.instanceId).catch(() => undefined);
  }

  /** Sends `message` to every instance listening on `channel` (fire and forget: listeners also poll what it announces). */
  broadcast(channel: string, message: string): void {
    if (!this.redis.isReady) return;
    void this.redis.publish(`stepwise:${channel}`, message).catch(() => undefined);
  }

  /** Calls `listener` with each message on `channel`, this instance's own included; resolves with the unsubscribe. */
  async listen(channel: string, listener: (message: string) => void): Promise<() => void> {
    await this.subscriber.subscribe(`stepwise:${channel}`, listener);
    return () => void this.subscriber.unsubscribe(`stepwise:${channel}`).catch(() => undefined);
  }

  /**
   * Passes a streaming preview on to the instances whose sockets follow the session (fire and
   * forget: a preview is a hint, its full event follows through the log).
   */
  publishPreview(sessionId: string, delta: DeltaEvent, afterSeq: number): void {
    if (!this.redis.isReady) return;
    const message: PreviewMessage = { from: this.instanceId, afterSeq, delta };
    void this.redis.publish(SESSION_CHANNEL(sessionId), JSON.stringify(message)).catch(() => undefined);
  }

  /**
   * Calls `listener` when another instance says the session's log grew or sends a streaming
   * preview, and every FOLLOW_LOOK_MS to look anyway (a notice lost while Redis was away delays
   * nothing for long); resolves with the unsubscribe. Without Redis the looks go on alone.
   */
  async follow(sessionId: string, listener: SessionListener): Promise<() => void> {
    const look = setInterval(() => listener({ kind: 'look' }), FOLLOW_LOOK_MS);
    look.unref();
    this.looks.add(look);
    let listeners = this.sessionListeners.get(sessionId);
    const first = !listeners;
    if (!listeners) {
      listeners = new Set();
      this.sessionListeners.set(sessionId, listeners);
    }
    listeners.add(listener);
    const unfollow = () => {
      clearInterval(look);
      this.looks.delete(look);
      const current = this.sessionListeners.get(sessionId);
      current?.delete(listener);
      if (current && current.size === 0) {
        this.sessionListeners.delete(sessionId);
        void this.subscriber.unsubscribe(SESSION_CHANNEL(sessionId)).catch(() => undefined);
      }
    };
    if (first) {
      await this.subscriber
        .subscribe(SESSION_CHANNEL(sessionId), (message) => {
          // A notice is the sender's id; a preview is JSON.
          const preview = message.startsWith('{') ? (JSON.parse(message) as PreviewMessage) : undefined;
          if ((preview?.from ?? message) === this.instanceId) return;
          const notice: SessionNotice = preview ? { kind: 'preview', delta: preview.delta, afterSeq: preview.afterSeq } : { kind: 'appended' };
          for (const callback of this.sessionListeners.get(sessionId) ?? []) callback(notice);
        })
        .catch((error: unknown) =>
          this.logger.warn({ err: error, session_id: sessionId }, 'could not follow a session across instances; looking it up meanwhile'),
        );
    }
    return unfollow;
  }

  /** A command for the session's run wherever it executes: here, or on the instance that holds its session. */
  async sendToSession(sessionId: string, command: ControlCommand): Promise<ControlOutcome> {
    const holder = await this.lease.holder(sessionId);
    if (!holder?.runId) return noOutcome(command);
    if (holder.instanceId === this.instanceId) return this.local.send(holder.runId, command);
    return this.sendRemote(holder.instanceId, holder.runId, command);
  }

  /** Answers travel to the run's instance; nothing keeps one for a run that executes nowhere. */
  async keepAnswer(): Promise<boolean> {
    return false;
  }

  /** Whether Redis answers now. */
  async healthy(): Promise<boolean> {
    if (!this.redis.isReady) return false;
    return this.redis.ping().then(
      () => true,
      () => false,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const look of this.looks) clearInterval(look);
    for (const client of [this.reader, this.subscriber, this.redis]) await client.close().catch(() => client.destroy());
  }

  /** Delivers a command to the run on the instance that executes it; retries while Redis is away. */
  private async sendRemote(instanceId: string, runId: string, command: ControlCommand): Promise<ControlOutcome> {
    const requestId = randomUUID();
    const reply = new Promise<ControlOutcome>((resolve) => this.waiting.set(requestId, resolve));
    const deadline = Date.now() + SEND_TIMEOUT_MS;
    const message: InboxMessage = { kind: 'control', requestId, replyTo: this.instanceId, runId, payload: JSON.stringify(command) };
    for (;;) {
      try {
        await this.redis.xAdd(INBOX(instanceId), '*', toFields(message), TRIM);
        break;
      } catch (error) {
        if (Date.now() > deadline) {
          this.waiting.delete(requestId);
          throw error;
        }
        await sleep(200);
      }
    }
    const timeout = sleep(Math.max(0, deadline - Date.now())).then((): ControlOutcome => noOutcome(command));
    const outcome = await Promise.race([reply, timeout]);
    this.waiting.delete(requestId);
    return outcome;
  }

  /** Reads this instance's inbox (commands for its runs, replies to its commands), from where it left off. */
  private async readInbox(): Promise<void> {
    while (!this.closed) {
      try {
        const streams = await this.reader.xRead({ key: INBOX(this.instanceId), id: this.lastInboxId }, { BLOCK: 1_000, COUNT: 100 });
        for (const stream of (streams as { messages: { id: string; message: Record<string, string> }[] }[] | null) ?? []) {
          for (const entry of stream.messages) {
            this.lastInboxId = entry.id;
            await this.handleInbox(entry.message as unknown as InboxMessage);
          }
        }
      } catch (error) {
        if (this.closed) return;
        this.logger.debug({ err: error instanceof Error ? error.message : String(error) }, 'inbox read failed; retrying');
        await sleep(200);
      }
    }
  }

  private async handleInbox(message: InboxMessage): Promise<void> {
    if (message.kind === 'reply') {
      this.waiting.get(message.requestId)?.(JSON.parse(message.payload) as ControlOutcome);
      return;
    }
    const command = JSON.parse(message.payload) as ControlCommand;
    const outcome = await this.local.send(message.runId!, command);
    const reply: InboxMessage = { kind: 'reply', requestId: message.requestId, payload: JSON.stringify(outcome) };
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        await this.redis.xAdd(INBOX(message.replyTo!), '*', toFields(reply), TRIM);
        return;
      } catch {
        await sleep(200);
      }
    }
  }
}

function toFields(message: InboxMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(message).filter(([, value]) => value !== undefined)) as Record<string, string>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
