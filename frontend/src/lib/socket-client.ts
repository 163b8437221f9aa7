import { AgentTextDelta, AgentUpdate, type ClientMessage, ServerEvent } from '@stepwise/shared-types';
import type { ConnectionState } from '../state/view-state.ts';

/** The part of the browser's WebSocket this client uses; `ws` sockets fit too, for tests. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

export interface SocketClientOptions {
  /** The socket URL, e.g. ws://127.0.0.1:8787/ws. */
  url: string;
  /** A session to rejoin at once (from the page URL). */
  sessionId?: string;
  createSocket?: (url: string) => SocketLike;
  /** Subprotocols to offer (the access token rides in one); read at each connection attempt. */
  protocols?: () => string[] | undefined;
  /** First and longest wait between reconnect attempts. */
  backoff?: { initialMs: number; maxMs: number };
  random?: () => number;
}

const OPEN = 1;

/**
 * An event the server sent that is not part of the contract this app knows (a newer server, say):
 * its type and seq; an agent_update of an update type this app does not know (a strategy's own)
 * keeps all its fields, unchecked, for the reducer to keep as a strategy event.
 */
export interface UnknownServerEvent {
  type: string;
  seq?: number;
  [field: string]: unknown;
}

/** The event types of the contract; a frame of one of them that fails validation is not trusted. */
const KNOWN_TYPES: ReadonlySet<string> = new Set(literalsOf(ServerEvent, 'type'));

/** The update types this app validates; any other agent_update is a strategy's own. */
const KNOWN_UPDATE_TYPES: ReadonlySet<string> = new Set([
  ...AgentUpdate.options.map((option) => option.shape.update_type.value),
  ...AgentTextDelta.shape.update_type.options,
]);

/**
 * The web app's one connection: it parses what arrives, remembers the session and the last seq,
 * and reconnects by itself with backoff, rejoining the session where it left off.
 */
export class StepwiseSocket {
  private socket: SocketLike | undefined;
  private connectionState: ConnectionState = 'connecting';
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closedByUs = false;
  private currentSessionId: string | undefined;
  private lastSeq = 0;
  private readonly eventListeners = new Set<(event: ServerEvent | UnknownServerEvent) => void>();
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly createSocket: (url: string) => SocketLike;
  private readonly backoff: { initialMs: number; maxMs: number };
  private readonly random: () => number;

  constructor(private readonly options: SocketClientOptions) {
    this.currentSessionId = options.sessionId;
    this.createSocket = options.createSocket ?? ((url) => new WebSocket(url, options.protocols?.()) as unknown as SocketLike);
    this.backoff = options.backoff ?? { initialMs: 500, maxMs: 10_000 };
    this.random = options.random ?? Math.random;
  }

  get state(): ConnectionState {
    return this.connectionState;
  }

  get sessionId(): string | undefined {
    return this.currentSessionId;
  }

  /** Subscribes to server events; returns the unsubscribe function. */
  onEvent(listener: (event: ServerEvent | UnknownServerEvent) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** Subscribes to connection state changes; returns the unsubscribe function. */
  onState(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  connect(): void {
    this.closedByUs = false;
    this.open();
  }

  /** Sends a message; false when the socket is not open (the caller tells the user). */
  send(message: ClientMessage): boolean {
    if (!this.socket || this.socket.readyState !== OPEN || this.connectionState !== 'live') return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Closes for good: no reconnect. */
  close(): void {
    this.closedByUs = true;
    clearTimeout(this.timer);
    this.socket?.close(1000, 'Client closed');
    this.socket = undefined;
  }

  private open(): void {
    const query = new URLSearchParams();
    if (this.currentSessionId) {
      query.set('session_id', this.currentSessionId);
      query.set('after_seq', String(this.lastSeq));
    }
    const url = query.size ? `${this.options.url}?${query}` : this.options.url;
    const socket = this.createSocket(url);
    this.socket = socket;
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      const event = parseServerEvent(message.data);
      if (!event) return;
      if (event.type === 'session') {
        const session = event as Extract<ServerEvent, { type: 'session' }>;
        if (session.session_id !== this.currentSessionId) this.lastSeq = 0;
        this.currentSessionId = session.session_id;
        this.attempt = 0;
        this.setState('live');
      }
      if ('seq' in event && typeof event.seq === 'number') this.lastSeq = Math.max(this.lastSeq, event.seq);
      for (const listener of this.eventListeners) listener(event);
    };
    socket.onclose = () => {
      if (socket !== this.socket) return;
      this.socket = undefined;
      if (this.closedByUs) return;
      this.setState('reconnecting');
      const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** this.attempt) * (0.5 + this.random() / 2);
      this.attempt++;
      this.timer = setTimeout(() => this.open(), delay);
    };
    socket.onerror = () => undefined; // a close always follows
  }

  private setState(state: ConnectionState): void {
    if (state === this.connectionState) return;
    this.connectionState = state;
    for (const listener of this.stateListeners) listener(state);
  }
}

/**
 * Parses one frame. Contract events are validated; an event of a type this app does not know
 * passes through as its type (and seq, so that it counts as seen), and an agent_update of an
 * update type it does not know with all its fields, for the run's strategy events. A frame of a
 * known type that fails validation is dropped: the reducer trusts the known types' fields.
 */
export function parseServerEvent(data: unknown): ServerEvent | UnknownServerEvent | undefined {
  if (typeof data !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  const parsed = ServerEvent.safeParse(value);
  if (parsed.success) return parsed.data;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const { type, seq } = record;
  if (typeof type !== 'string') return undefined;
  const logged = typeof seq === 'number' && Number.isInteger(seq) && seq > 0;
  if (type === 'agent_update' && typeof record.update_type === 'string' && !KNOWN_UPDATE_TYPES.has(record.update_type)) {
    // A strategy's own event: kept whole when it is logged and says which run it belongs to.
    return logged && typeof record.run_id === 'string' && typeof record.ts === 'string' ? (record as UnknownServerEvent) : undefined;
  }
  if (KNOWN_TYPES.has(type)) return undefined;
  return logged ? { type, seq } : { type };
}

/** The literal values a field takes across a schema's unions (read through zod's public `options` and `shape`). */
function literalsOf(schema: unknown, field: string): string[] {
  const node = schema as { options?: unknown[]; shape?: Record<string, { value?: unknown; options?: unknown[] }> };
  if (Array.isArray(node.options) && !node.shape) return node.options.flatMap((option) => literalsOf(option, field));
  const literal = node.shape?.[field];
  if (!literal) return [];
  if (typeof literal.value === 'string') return [literal.value];
  return Array.isArray(literal.options) ? literal.options.filter((value): value is string => typeof value === 'string') : [];
}
