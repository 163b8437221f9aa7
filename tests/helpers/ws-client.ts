import type { ServerEvent } from '@stepwise/shared-types';
import WebSocket from 'ws';
import { Waiters } from './waiters.ts';

type Event = ServerEvent & Record<string, unknown>;

/** How long a wait for the server may take by default: far more than it needs on an idle machine. */
const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * Messages that are not part of any chat: the session greeting, and tools_changed and model_health, which the server
 * sends to every client whenever an MCP server connects, drops or comes back (so at any moment,
 * also in the middle of a run). A chat's sequence leaves them out.
 */
const OUTSIDE_THE_CHAT = new Set(['session', 'tools_changed', 'model_health']);

/** Whether the event belongs to a chat (not a session greeting or a tools_changed broadcast). */
export function inChat(event: Record<string, unknown>): boolean {
  return !OUTSIDE_THE_CHAT.has(String(event.type));
}

/** A real WebSocket client that records everything the server sends. */
export class TestClient {
  readonly events: Event[] = [];
  private readonly waiters = new Waiters();
  closeCode: number | undefined;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data, isBinary) => {
      if (!isBinary) this.events.push(JSON.parse(data.toString()) as Event);
      this.notify();
    });
    socket.on('close', (code) => {
      this.closeCode = code;
      this.notify();
    });
    // A refused or reset connection is the test's to see (connect() rejects with it), never an uncaught error.
    socket.on('error', (error) => {
      this.error = error;
      this.notify();
    });
  }

  /** Why the socket failed, if it did. */
  error: Error | undefined;

  /** Connects and waits for the `session` message. */
  static async connect(
    wsUrl: string,
    query: Record<string, string | number> = {},
    options: { headers?: Record<string, string>; protocols?: string[]; localAddress?: string } = {},
  ): Promise<TestClient> {
    const search = new URLSearchParams(Object.entries(query).map(([key, value]) => [key, String(value)]));
    const socket = new WebSocket(`${wsUrl}${search.size ? `?${search}` : ''}`, options.protocols, {
      headers: options.headers,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    });
    const client = new TestClient(socket);
    await client.waitUntil(() => {
      if (client.error) throw client.error;
      return client.events.find((event) => event.type === 'session');
    });
    return client;
  }

  get session(): Extract<Event, { type: 'session' }> {
    return this.events.find((event) => event.type === 'session') as Extract<Event, { type: 'session' }>;
  }

  /** Logged events (those with a seq), in arrival order. */
  get logged(): Event[] {
    return this.events.filter((event) => 'seq' in event);
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  chat(content: string, options: Record<string, unknown> = {}): void {
    this.send({ type: 'chat', content, ...options });
  }

  /** Waits for the first event after `from` (an index into events) matching the predicate. */
  next(predicate: (event: Event) => boolean, options: { from?: number; timeoutMs?: number } = {}): Promise<Event> {
    const from = options.from ?? 0;
    return this.waitUntil(() => this.events.slice(from).find(predicate), options.timeoutMs);
  }

  /** Waits for an `agent_update` of this update_type (or an event of this type). */
  waitFor(kind: string, options: { from?: number; timeoutMs?: number } = {}): Promise<Event> {
    return this.next((event) => event.type === kind || event.update_type === kind, options);
  }

  /**
   * Waits for the next `response_complete` after `from`, and returns the chat's events up to it:
   * messages outside the chat (tools_changed, which may arrive at any time) are left out.
   */
  async untilComplete(options: { from?: number; timeoutMs?: number } = {}): Promise<Event[]> {
    const from = options.from ?? 0;
    const complete = await this.waitFor('response_complete', options);
    return this.events.slice(from, this.events.indexOf(complete) + 1).filter(inChat);
  }

  /** Waits for the socket to close; returns the close code. */
  closed(timeoutMs?: number): Promise<number> {
    return this.waitUntil(() => this.closeCode, timeoutMs);
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    await this.closed();
  }

  /** Waits until `find` returns something; it is asked again whenever a message arrives or the socket closes. */
  waitUntil<T>(find: () => T | undefined, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<T> {
    return this.waiters.until(find, timeoutMs, () => new Error(`Timed out; events so far:\n${summarize(this.events).join('\n')}`));
  }

  private notify(): void {
    this.waiters.notify();
  }
}

/**
 * A compact, readable form of a chat's event sequence: ['agent_turn_start:1', 'tool_start:calculator', …].
 * Streaming deltas and messages outside the chat (session, tools_changed) are left out.
 */
export function summarize(events: readonly Record<string, unknown>[]): string[] {
  return (
    events
      // Deltas and agent_usage (a model call's spending) are left out: they say nothing of the run's course.
      .filter((event) => !String(event.update_type ?? event.type).endsWith('delta') && event.update_type !== 'agent_usage' && inChat(event))
      .map((event) => {
        const kind = String(event.type === 'agent_update' ? event.update_type : event.type);
        if (event.type === 'error') return `error:${String(event.code)}`;
        if (String(event.type).startsWith('tool_')) return `${kind}:${String(event.tool_name)}`;
        if (kind === 'agent_stopped') return `${kind}:${String(event.reason)}`;
        if (kind === 'agent_completion') return `${kind}:${String(event.reason)}`;
        return typeof event.step === 'number' ? `${kind}:${event.step}` : kind;
      })
  );
}

/** The summary of step `step` of a reason–act–observe run that called these tools in this order. */
export function stepOf(step: number, ...tools: string[]): string[] {
  return [
    `agent_turn_start:${step}`,
    `agent_reason:${step}`,
    ...tools.flatMap((tool) => [`tool_start:${tool}`, `tool_complete:${tool}`]),
    `agent_observe:${step}`,
  ];
}

/** The summary of a run that answered in one step, calling these tools in this order on the way. */
export function answeredInOneStep(...tools: string[]): string[] {
  return ['agent_start', ...stepOf(1, ...tools), 'assistant_message', 'agent_completion:answered', 'response_complete'];
}
