import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { ErrorCode } from '@stepwise/shared-types';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type {} from '@fastify/cookie';
import type { Config } from '../config/config.ts';
import { decodeSession, readSession, SESSION_COOKIE, TrustedProxies, userFromHeaders } from '../auth/identify.ts';
import { LOCAL_USER, type User } from '../auth/user.ts';

/** The subprotocol a browser offers (with `bearer.TOKEN`) and the server answers with. */
export const SUBPROTOCOL = 'stepwise';
const BEARER_PROTOCOL_PREFIX = 'bearer.';

/**
 * What a route lets through, declared in its `config.access`: `public` (the health check and the
 * web app's files: no token), `socket` (the upgrade: token by header or subprotocol, origin
 * checked). A route that declares nothing is `api`: token by header, origin checked when sent.
 */
export type RouteAccess = 'public' | 'socket' | 'api' | 'metrics';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request (set by the access check); undefined on public routes when nobody is signed in. */
    user: User | undefined;
  }
  interface FastifyContextConfig {
    /** Who may call the route (see RouteAccess); undeclared: `api`. */
    access?: RouteAccess;
    /** The health check: answered whatever the Host header says. */
    health?: boolean;
  }
}

/** Route options that mark a route as open to anyone who may reach the server. */
export const PUBLIC_ROUTE = { config: { access: 'public' as RouteAccess } };
export const SOCKET_ROUTE = { config: { access: 'socket' as RouteAccess } };
/** `/metrics`: as `api`, or with METRICS_TOKEN, which opens this route and nothing else. */
export const METRICS_ROUTE = { config: { access: 'metrics' as RouteAccess } };

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

/** The names a server answers to, beyond loopback names and IP addresses. */
export interface HostPolicy {
  publicOrigin: string | undefined;
  allowedHosts: string[];
  /** The bind address, when it is a name (HOST=myhost.lan). */
  bindHost: string;
}

/** The host name of a `Host` header (or an absolute-form target's authority): lower case, no port, no trailing dot. */
export function hostName(authority: string): string | undefined {
  const value = authority.trim().toLowerCase();
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]/\s@]+)(?::(\d{1,5}))?$/.exec(value);
  if (!match) return undefined;
  return match[1]!.replace(/\.$/, '');
}

/**
 * Whether the server answers to this host name. A DNS rebinding page reaches the server under
 * the attacker's own name, so only names the server is meant to have pass: loopback names, IP
 * addresses (a rebinding needs a name), the public origin's host, ALLOWED_HOSTS, the bind name.
 */
export function hostAllowed(name: string | undefined, policy: HostPolicy): boolean {
  if (!name) return false;
  const bare = name.startsWith('[') ? name.slice(1, -1) : name;
  if (isIP(bare) !== 0) return true;
  if (isLoopbackName(name)) return true;
  if (policy.publicOrigin && new URL(policy.publicOrigin).hostname === name) return true;
  if (isIP(policy.bindHost) === 0 && policy.bindHost.toLowerCase() === name) return true;
  return listed(name, policy.allowedHosts);
}

function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost');
}

function listed(name: string, allowedHosts: string[]): boolean {
  return allowedHosts.some((entry) => (entry.startsWith('*.') ? name.endsWith(entry.slice(1)) : entry === name));
}

/**
 * Whether a browser origin may use the server: the listed ALLOWED_ORIGINS when set; otherwise
 * loopback origins, the public origin, origins on ALLOWED_HOSTS, and the origin of the (already
 * checked) host the request was sent to.
 */
export function originAllowed(origin: string, checkedHost: string | undefined, access: Config['access'], policy: HostPolicy): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  if (access.allowedOrigins) return access.allowedOrigins.some((entry) => new URL(entry).origin === parsed.origin);
  if (access.publicOrigin === parsed.origin) return true;
  if (checkedHost && parsed.host === checkedHost.toLowerCase()) return true;
  const name = parsed.hostname.replace(/\.$/, '');
  return isLoopbackName(name) || name === '127.0.0.1' || name === '[::1]' || listed(name, policy.allowedHosts);
}

/** The authority of an absolute-form request target (`GET http://host/path HTTP/1.1`), if it is one. */
function absoluteFormAuthority(rawUrl: string): string | undefined | null {
  if (rawUrl.startsWith('/')) return undefined;
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(rawUrl);
  return match ? match[1]! : null;
}

type Refusal = { status: number; code: ErrorCode; message: string; challenge?: boolean };

/** What the access check decided: a refusal, or who the request comes from (nobody, on public routes and METRICS_TOKEN scrapes). */
export type AccessDecision = { refusal: Refusal } | { user: User | undefined };

/** How the check reads a signed cookie: its verified value, or undefined. */
export type CookieReader = (name: string) => string | undefined;

/**
 * Decides one request. Access is decided on the route that will actually run (Fastify has
 * matched it before any hook runs), never on the raw URL, so no encoding, case or request-target
 * form can reach a route past its check; a route that declares nothing needs a user.
 */
export function decideAccess(
  request: Pick<FastifyRequest, 'headers' | 'raw'> & { routeOptions: { config?: unknown }; ws?: boolean; socket?: { remoteAddress?: string | undefined } },
  config: Config,
  readCookie: CookieReader = () => undefined,
  proxies?: TrustedProxies,
): AccessDecision {
  const access: RouteAccess = (request.routeOptions.config as { access?: RouteAccess } | undefined)?.access ?? 'api';
  const policy: HostPolicy = { ...config.access, bindHost: config.host };
  const isHealth = access === 'public' && (request.routeOptions.config as { health?: boolean } | undefined)?.health === true;

  if (!isHealth) {
    const target = absoluteFormAuthority(request.raw.url ?? '');
    if (target === null) return { refusal: { status: 400, code: 'bad_request', message: 'Unsupported request target' } };
    // Both the Host header and, in absolute form, the target's authority must name this server.
    const authorities = [request.headers.host, ...(target === undefined ? [] : [target])];
    for (const authority of authorities) {
      if (!hostAllowed(authority === undefined ? undefined : hostName(authority), policy)) {
        return {
          refusal: {
            status: 421,
            code: 'forbidden_host',
            message: `This server does not answer to the host "${String(authority ?? '').slice(0, 100)}"; add it to ALLOWED_HOSTS or PUBLIC_ORIGIN`,
          },
        };
      }
    }
  }
  if (access === 'public') return { user: publicUser(request, config, readCookie, proxies) };

  const origin = request.headers.origin;
  if (origin !== undefined && !originAllowed(origin, request.headers.host, config.access, policy)) {
    return { refusal: { status: 403, code: 'forbidden_origin', message: 'This origin may not use the server' } };
  }
  const { metricsToken } = config.access;
  const token = presentedToken(request as FastifyRequest, access === 'socket');
  // METRICS_TOKEN opens /metrics (and nothing else) in every mode.
  if (access === 'metrics' && metricsToken && token && sameSecret(token, metricsToken)) return { user: undefined };
  const unauthorized = (message: string): AccessDecision => ({ refusal: { status: 401, code: 'unauthorized', message, challenge: true } });
  if (config.auth.mode === 'none' && access === 'metrics' && metricsToken && isLoopbackAddress(request.socket?.remoteAddress)) {
    return unauthorized('A valid token is required');
  }
  const user = identify(request, config, token, readCookie, proxies);
  if (typeof user === 'string') return unauthorized(user);
  // With several users, the metrics (everyone's activity) are an admin's, or METRICS_TOKEN's.
  if (access === 'metrics' && (config.auth.mode === 'oidc' || config.auth.mode === 'header') && !user.admin)
    return unauthorized('Metrics are for admins, or METRICS_TOKEN');
  return { user };
}

/** Who a public request comes from, when it says (the web app's /api/me asks on a public route too). */
function publicUser(
  request: Pick<FastifyRequest, 'headers'> & { socket?: { remoteAddress?: string | undefined } },
  config: Config,
  readCookie: CookieReader,
  proxies: TrustedProxies | undefined,
): User | undefined {
  const user = identify(request, config, presentedToken(request as FastifyRequest, false), readCookie, proxies);
  return typeof user === 'string' ? undefined : user;
}

/** The user a request names in the server's AUTH_MODE, or why it names nobody. */
function identify(
  request: Pick<FastifyRequest, 'headers'> & { socket?: { remoteAddress?: string | undefined } },
  config: Config,
  token: string | undefined,
  readCookie: CookieReader,
  proxies: TrustedProxies | undefined,
): User | string {
  switch (config.auth.mode) {
    case 'none':
      // No sign-in means this machine only: a client from elsewhere must be let in by a mode that knows who it is.
      return isLoopbackAddress(request.socket?.remoteAddress)
        ? LOCAL_USER
        : 'This Stepwise has no sign-in (AUTH_MODE=none) and answers only on this machine; set AUTH_TOKEN, or AUTH_MODE=oidc or header, to open it to others';
    case 'token':
      return token && config.access.authToken && sameSecret(token, config.access.authToken) ? LOCAL_USER : 'A valid token is required';
    case 'oidc':
      return signedInUser(readCookie) ?? 'Sign in first: /auth/login';
    case 'header': {
      const vouched = userFromHeaders(request.headers, request.socket?.remoteAddress, config.auth, proxies ?? new TrustedProxies(config.auth.trustedProxies));
      if (vouched === 'untrusted_address')
        return `The ${config.auth.header} header is believed only from TRUSTED_PROXIES; this request did not come through the sign-in proxy`;
      if (typeof vouched === 'string') return `The sign-in proxy named no user (${config.auth.header})`;
      return vouched;
    }
  }
}

/** Whether a peer is this machine: 127.0.0.0/8, ::1, or IPv4 loopback on a dual-stack socket. Unknown (a test's fake request) counts as local. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return true;
  const v4 = address.replace(/^::ffff:/i, '');
  return /^127\.\d+\.\d+\.\d+$/.test(v4) || address === '::1';
}

function signedInUser(readCookie: CookieReader): User | undefined {
  const value = readCookie(SESSION_COOKIE);
  return value === undefined ? undefined : decodeSession(value);
}

/** Whether a sign-in (by its id) was ended: the store's record of logouts, which every instance reads. */
export type RevokedSignIns = (id: string) => Promise<boolean>;

/**
 * The access check of every request, as an onRequest hook (PROTOCOL.md "Access"); it sets
 * `request.user`. With AUTH_MODE=oidc a cookie whose sign-in was ended (logout) names nobody, on
 * every instance, though its signature and expiry are still good.
 */
export function checkAccess(config: Config, revoked: RevokedSignIns = async () => false) {
  const proxies = config.auth.mode === 'header' ? new TrustedProxies(config.auth.trustedProxies) : undefined;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const readCookie: CookieReader = (name) => {
      const raw = (request as { cookies?: Record<string, string | undefined> }).cookies?.[name];
      if (raw === undefined || typeof request.unsignCookie !== 'function') return undefined;
      const unsigned = request.unsignCookie(raw);
      return unsigned.valid && unsigned.value !== null ? unsigned.value : undefined;
    };
    const isPublic = (request.routeOptions.config as { access?: RouteAccess } | undefined)?.access === 'public';
    const decision = await withoutEndedSignIn(decideAccess(request, config, readCookie, proxies), isPublic, config, readCookie, revoked);
    if ('user' in decision) {
      request.user = decision.user;
      return;
    }
    const { refusal } = decision;
    if (refusal.challenge) reply.header('www-authenticate', config.auth.mode === 'token' ? 'Bearer' : 'Cookie');
    return reply.code(refusal.status).send({ error: { code: refusal.code, message: refusal.message } });
  };
}

/** The decision, unless it rests on a sign-in cookie whose sign-in was ended: then nobody (public routes) or 401. */
async function withoutEndedSignIn(
  decision: AccessDecision,
  isPublic: boolean,
  config: Config,
  readCookie: CookieReader,
  revoked: RevokedSignIns,
): Promise<AccessDecision> {
  // With oidc, a user comes from the cookie only.
  if (config.auth.mode !== 'oidc' || !('user' in decision) || decision.user === undefined) return decision;
  const value = readCookie(SESSION_COOKIE);
  const signIn = value === undefined ? undefined : readSession(value);
  if (!signIn || !(await revoked(signIn.id))) return decision;
  if (isPublic) return { user: undefined };
  return { refusal: { status: 401, code: 'unauthorized', message: 'This sign-in was ended (signed out); sign in again: /auth/login', challenge: true } };
}

/** ws's choice among the offered subprotocols: ours, never the one carrying the token. */
export function chooseSubprotocol(protocols: Set<string>): string | false {
  return protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false;
}
