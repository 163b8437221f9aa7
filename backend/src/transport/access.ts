import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.ts';

/** The subprotocol a browser offers (with `bearer.TOKEN`) and the server answers with. */
export const SUBPROTOCOL = 'stepwise';
const BEARER_PROTOCOL_PREFIX = 'bearer.';

/** Compares secrets in constant time (hashing first, so lengths leak nothing either). */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The token a request presents: `Authorization: Bearer …`, or for upgrades the `bearer.…` subprotocol. */
export function presentedToken(request: FastifyRequest, allowSubprotocol: boolean): string | undefined {
  const header = request.headers.authorization;
  const bearer = header && /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
  if (bearer) return bearer;
  if (!allowSubprotocol) return undefined;
  const offered = String(request.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((protocol) => protocol.trim());
  return offered.find((protocol) => protocol.startsWith(BEARER_PROTOCOL_PREFIX))?.slice(BEARER_PROTOCOL_PREFIX.length);
}

/** Whether a browser origin may open the socket: the listed ones, or by default this server's own and localhost. */
export function originAllowed(origin: string, host: string | undefined, allowed: string[] | undefined): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (allowed) return allowed.some((entry) => new URL(entry).origin === parsed.origin);
  if (host && parsed.host === host) return true;
  return ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname);
}

/**
 * The access check of every REST call and socket upgrade, as PROTOCOL.md's "Access" says:
 * 401 without the right token (when AUTH_TOKEN is set), 403 for a browser origin not allowed.
 */
export function checkAccess(config: Config) {
  const { authToken, allowedOrigins } = config.access;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const isUpgrade = path === '/ws';
    if (!isUpgrade && (!path.startsWith('/api/') || path === '/api/health')) return;
    if (isUpgrade) {
      const origin = request.headers.origin;
      if (origin && !originAllowed(origin, request.headers.host, allowedOrigins)) {
        return reply.code(403).send({ error: { code: 'forbidden_origin', message: 'This origin may not open the socket' } });
      }
    }
    if (!authToken) return;
    const token = presentedToken(request, isUpgrade);
    if (!token || !sameSecret(token, authToken)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({ error: { code: 'unauthorized', message: 'A valid token is required' } });
    }
  };
}

/** ws's choice among the offered subprotocols: ours, never the one carrying the token. */
export function chooseSubprotocol(protocols: Set<string>): string | false {
  return protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false;
}
