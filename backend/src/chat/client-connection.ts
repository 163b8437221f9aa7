import type { ServerEvent } from '@stepwise/shared-types';

/**
 * One client's connection as the core sees it: every transport adapts its own to this and hands it
 * to the ConnectionHandler (the socket's, an AG-UI response's). Events reach it through `send`.
 */
export interface ClientConnection {
  /**
   * Sends one message; silently drops it when the connection is already closed. A client that
   * stays behind (see `congested`) is closed by the transport, and may rejoin with `after_seq`.
   */
  send(message: ServerEvent): void;
  /** True while more bytes wait to go out to the client than the connection allows. */
  readonly congested: boolean;
  /** True once the connection is closing or closed: nothing sent now arrives. */
  readonly closed: boolean;
  /** Resolves once the connection is no longer congested, or has closed; rejects when `signal` aborts. */
  whenDrained(signal?: AbortSignal): Promise<void>;
  /** Closes the connection after what was sent so far (a WebSocket close code and a short reason). */
  close(code: number, reason: string): void;
}
