import { type ClientRequest, Agent as HttpAgent, type IncomingMessage, type RequestOptions, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { abortReason } from '../util/abort.ts';

/**
 * How long an idle connection to the model endpoint is kept for the next call (fetch keeps them
 * 4 s). A server that announces a shorter keep-alive in its response headers is believed.
 */
const IDLE_CONNECTION_MS = 4_000;

// One pool per protocol for the whole process, as fetch has: calls reuse open connections.
const agents = {
  'http:': new HttpAgent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  'https:': new HttpsAgent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
};

/** The endpoint could not be reached, or the connection failed before the response began; `cause` has the system's code. */
export class ConnectionFailedError extends Error {
  constructor(cause: unknown) {
    super(`connection failed: ${(cause as Error)?.message ?? cause}`, { cause });
    this.name = 'ConnectionFailedError';
  }
}

/** No response headers within the time allowed (LLM_TIMEOUT_MS). */
export class ResponseTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`);
    this.name = 'ResponseTimeoutError';
  }
}

/** Where requests go, worked out once from the URL (node:http would parse it again for every request). */
export interface Endpoint {
  readonly target: Readonly<RequestOptions>;
  readonly send: (options: RequestOptions) => ClientRequest;
}

/** The endpoint of a URL: http or https, host, port and path, on the shared keep-alive pool. */
export function endpointOf(url: URL): Endpoint {
  const https = url.protocol === 'https:';
  return {
    target: {
      method: 'POST',
      protocol: url.protocol,
      // A bracketed IPv6 address is given to the socket without its brackets.
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || (https ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      agent: https ? agents['https:'] : agents['http:'],
    },
    send: https ? httpsRequest : httpRequest,
  };
}

export interface PostOptions {
  headers: Record<string, string>;
  /** Aborts the request at once, whatever stage it is at; the promise then rejects with the signal's reason. */
  signal: AbortSignal;
  /** The longest wait from sending to the response's status and headers. */
  responseTimeoutMs: number;
}

/**
 * POSTs a body that is already serialised (JSON text) over node:http or node:https, on a
 * keep-alive connection, and resolves with the response as soon as its status and headers are in.
 * Its body is the caller's to read to the end (the connection then serves the next call) or to
 * destroy (which closes the connection, so the endpoint sees the request aborted).
 *
 * Nothing here retries, follows redirects or decodes: the adapter decides what to retry, a model
 * endpoint does not redirect its API calls, and no Accept-Encoding is sent. This is all a model
 * call needs from HTTP; fetch and the openai SDK on top of it cost several times more CPU per call
 * (bench/src/request-paths.ts measures both).
 */
export function postJson(endpoint: Endpoint, body: string, options: PostOptions): Promise<IncomingMessage> {
  const { signal, responseTimeoutMs } = options;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  const payload = Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    const outgoing = endpoint.send({
      ...endpoint.target,
      headers: { ...options.headers, 'content-type': 'application/json', 'content-length': String(payload.byteLength) },
    });
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      cleanUp();
      outgoing.destroy();
      reject(error);
    };
    const onAbort = () => fail(abortReason(signal));
    const timer = setTimeout(() => fail(new ResponseTimeoutError(responseTimeoutMs)), responseTimeoutMs);
    timer.unref();
    const cleanUp = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    // The listener stays: a connection that breaks later reaches the response's reader as an
    // error of the response, and an 'error' nobody listens to would end the process.
    outgoing.on('error', (error) => fail(new ConnectionFailedError(error)));
    outgoing.on('response', (response) => {
      if (settled) {
        response.destroy();
        return;
      }
      settled = true;
      cleanUp();
      // The body's reader listens for errors of its own; this one only keeps an error that comes
      // before it does from ending the process as an unhandled 'error' event.
      response.on('error', () => undefined);
      resolve(response);
    });
    outgoing.end(payload);
  });
}

/**
 * The first `maxBytes` of a response body as text; the rest is not read, and the connection is
 * closed unless the body had already ended. Rejects with the signal's reason when it aborts.
 */
export function readTextPrefix(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let bytes = 0;
    const finish = (error?: Error) => {
      signal.removeEventListener('abort', onAbort);
      response.off('data', onData).off('end', onEnd).off('error', onError).off('close', onEnd);
      if (!response.complete || bytes >= maxBytes) response.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(parts).subarray(0, maxBytes).toString('utf8'));
    };
    const onData = (chunk: Buffer) => {
      parts.push(chunk);
      bytes += chunk.byteLength;
      if (bytes >= maxBytes) finish();
    };
    const onEnd = () => finish();
    const onError = () => finish(); // what came before the break is what there is
    const onAbort = () => finish(abortReason(signal));
    if (signal.aborted) return finish(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    response.on('data', onData).on('end', onEnd).on('error', onError).on('close', onEnd);
  });
}
