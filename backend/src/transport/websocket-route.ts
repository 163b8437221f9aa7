import type { FastifyInstance } from 'fastify';
import type { RawData } from 'ws';
import type { ConnectionHandler } from '../chat/connection-handler.ts';
import type { SocketsPerClient } from './connection-limits.ts';
import { SOCKET_ROUTE } from './access.ts';
import { type BackpressureLimits, WebSocketConnection } from './websocket-connection.ts';

/** `/ws`: hands each socket to the transport-free connection handler, and nothing more. */
export function registerWebSocketRoute(app: FastifyInstance, handler: ConnectionHandler, limits: SocketsPerClient, backpressure: BackpressureLimits): void {
  app.get('/ws', { websocket: true, onRequest: limits.check, ...SOCKET_ROUTE }, (socket, request) => {
    const countOut = limits.add(request.client);
    const query = request.query as Record<string, string | undefined>;
    const ready = handler.open(new WebSocketConnection(socket, backpressure, request.raw.socket), {
      sessionId: query.session_id,
      afterSeq: query.after_seq,
      client: request.client,
      user: request.user,
    });
    // Frames that arrive while the session is being opened wait for it, in order.
    socket.on('message', (data: RawData, isBinary: boolean) => {
      void ready.then((session) => (isBinary ? session.onBinary() : session.onText(toText(data))));
    });
    socket.on('close', () => {
      countOut();
      void ready.then((session) => session.release());
    });
    ready.catch((error: unknown) => {
      request.log.error({ err: error }, 'could not open the session');
      socket.close(1011, 'Could not open the session');
    });
  });
}

function toText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
