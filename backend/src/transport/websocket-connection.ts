import type { ServerEvent } from '@stepwise/shared-types';
import { WebSocket } from 'ws';
import type { ClientConnection } from '../chat/client-connection.ts';

/** The ClientConnection port on a `ws` socket. */
export class WebSocketConnection implements ClientConnection {
  constructor(private readonly socket: WebSocket) {}

  send(message: ServerEvent): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }
}
