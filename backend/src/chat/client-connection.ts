import type { ServerEvent } from '@stepwise/shared-types';

/** One client's connection as the core sees it; the WebSocket adapter implements it. */
export interface ClientConnection {
  /** Sends one message; silently drops it when the connection is already closed. */
  send(message: ServerEvent): void;
}
