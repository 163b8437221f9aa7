import { connect } from 'node:net';

/** A response read off a raw connection: the status line's code, the header block and the body. */
export interface RawResponse {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends one request exactly as written, request target included, over a plain TCP connection:
 * client libraries normalise paths (`/%61pi` stays as it is here) and never send absolute-form
 * targets. Resolves once the server closes the connection, or at once for a 101 Switching Protocols.
 */
export function rawRequest(
  url: string,
  request: { method?: string; target: string; headers?: Record<string, string | undefined>; body?: string },
): Promise<RawResponse> {
  const { hostname, port, host } = new URL(url);
  const headers: Record<string, string | undefined> = { host, connection: 'close', ...request.headers };
  if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
  const lines = Object.entries(headers).flatMap(([name, value]) => (value === undefined ? [] : [`${name}: ${value}`]));
  const text = `${request.method ?? 'GET'} ${request.target} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${request.body ?? ''}`;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ''));
    let received = '';
    const finish = () => {
      const end = received.indexOf('\r\n\r\n');
      const head = end === -1 ? received : received.slice(0, end);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: end === -1 ? '' : received.slice(end + 4) });
    };
    socket.on('connect', () => socket.write(text));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      // An accepted upgrade keeps the connection open: its status line is all there is to read.
      if (/^HTTP\/1\.1 101 /.test(received) && received.includes('\r\n\r\n')) {
        socket.destroy();
        finish();
      }
    });
    socket.on('end', () => {
      socket.destroy();
      finish();
    });
    socket.on('error', reject);
  });
}

/** The headers of a WebSocket upgrade request. */
export function upgradeHeaders(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-version': '13',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    ...extra,
  };
}
