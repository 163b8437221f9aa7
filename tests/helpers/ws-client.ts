import type { ServerEvent } from '@stepwise/shared-types';
import WebSocket from 'ws';

type Event = ServerEvent & Record<string, unknown>;

/** A real WebSocket client that records everything the server sends. */
export class TestClient {
  readonly events: Event[] = [];
  private readonly waiters = new Set<() => void>();
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
  }

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
    await client.next((event) => event.type === 'session');
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
    return this.until(() => this.events.slice(from).find(predicate), options.timeoutMs ?? 5_000);
  }

  /** Waits for an `agent_update` of this update_type (or an event of this type). */
  waitFor(kind: string, options: { from?: number; timeoutMs?: number } = {}): Promise<Event> {
    return this.next((event) => event.type === kind || event.update_type === kind, options);
  }

  /** Waits for the next `response_complete` after `from`, and returns the events up to it. */
  async untilComplete(options: { from?: number; timeoutMs?: number } = {}): Promise<Event[]> {
    const from = options.from ?? 0;
    const complete = await this.waitFor('response_complete', options);
    return this.events.slice(from, this.events.indexOf(complete) + 1);
  }

  /** Waits for the socket to close; returns the close code. */
  closed(timeoutMs = 5_000): Promise<number> {
    return this.until(() => this.closeCode, timeoutMs);
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    await this.closed();
  }

  private until<T>(find: () => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found === undefined) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`Timed out; events so far:\n${summarize(this.events).join('\n')}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** A compact, readable form of an event sequence: ['agent_turn_start:1', 'tool_start:calculator', …]. */
export function summarize(events: readonly Record<string, unknown>[]): string[] {
  return events
    .filter((event) => !String(event.update_type ?? event.type).endsWith('delta') && event.type !== 'session')
    .map((event) => {
      const kind = String(event.type === 'agent_update' ? event.update_type : event.type);
      if (event.type === 'error') return `error:${String(event.code)}`;
      if (String(event.type).startsWith('tool_')) return `${kind}:${String(event.tool_name)}`;
      if (kind === 'agent_stopped') return `${kind}:${String(event.reason)}`;
      if (kind === 'agent_completion') return `${kind}:${String(event.reason)}`;
      return typeof event.step === 'number' ? `${kind}:${event.step}` : kind;
    });
}
