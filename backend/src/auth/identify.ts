import { randomUUID } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { AuthUser } from '@stepwise/shared-types';
import type { AuthConfig } from '../config/config.ts';
import { cleanEmail, cleanName, userIdProblem } from './identity.ts';
import type { User } from './user.ts';

/** The sign-in cookie (AUTH_MODE oidc): who the person is, signed with SESSION_SECRET, so any instance reads it. */
export const SESSION_COOKIE = 'stepwise_session';
/** The cookie that carries a sign-in in progress (state, PKCE verifier, nonce) from /auth/login to /auth/callback. */
export const LOGIN_COOKIE = 'stepwise_login';

/** A sign-in as its cookie carries it: who, the sign-in's own id (what logout revokes), and when it ends. */
export interface SignIn {
  user: User;
  id: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** The cookie's value before signing: the user, the sign-in's id and an expiry, as base64url JSON. */
export function encodeSession(user: User, maxAgeMs: number, now = Date.now(), id: string = randomUUID()): string {
  return Buffer.from(JSON.stringify({ ...user, sid: id, exp: now + maxAgeMs })).toString('base64url');
}

/**
 * The sign-in of a verified cookie value; undefined when it is malformed, expired, or has no id
 * (a cookie from before sign-ins could be revoked: its holder signs in again).
 */
export function readSession(value: string, now = Date.now()): SignIn | undefined {
  try {
    const data = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as { exp?: unknown; sid?: unknown };
    if (typeof data.exp !== 'number' || data.exp <= now) return undefined;
    if (typeof data.sid !== 'string' || !data.sid) return undefined;
    const parsed = AuthUser.safeParse(data);
    return parsed.success ? { user: parsed.data, id: data.sid, expiresAt: data.exp } : undefined;
  } catch {
    return undefined;
  }
}

/** The user of a verified cookie value; undefined when it is malformed or expired. */
export function decodeSession(value: string, now = Date.now()): User | undefined {
  return readSession(value, now)?.user;
}

/** The addresses an auth proxy may call from (TRUSTED_PROXIES): addresses and CIDR ranges, v4 and v6. */
export class TrustedProxies {
  private readonly list = new BlockList();

  constructor(entries: string[]) {
    for (const entry of entries) {
      const [address, bits] = entry.split('/') as [string, string | undefined];
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(bits), family);
    }
  }

  /** Whether a connection from `address` (as the socket reports it) comes from a trusted proxy. */
  trusts(address: string | undefined): boolean {
    if (!address) return false;
    // An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    if (v4) return this.list.check(v4, 'ipv4');
    return this.list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
}

/** Why a request names no user. */
export type HeaderRefusal = 'untrusted_address' | 'no_header' | 'bad_header';

/**
 * The user an auth proxy vouches for (AUTH_MODE header): believed only when the connection comes
 * from a trusted proxy. The header's value is the user's id and name (a valid user id: see
 * userIdProblem). An admin is listed in AUTH_ADMIN_USERS: by exact user name, or by email (an entry
 * with an @), which only the email header can match: an email header equal to an admin's user
 * name grants nothing.
 */
export function userFromHeaders(
  headers: Record<string, string | string[] | undefined>,
  peer: string | undefined,
  auth: Extract<AuthConfig, { mode: 'header' }>,
  proxies: TrustedProxies,
): User | HeaderRefusal {
  if (!proxies.trusts(peer)) return 'untrusted_address';
  const raw = headers[auth.header];
  if (raw === undefined) return 'no_header';
  const name = (Array.isArray(raw) ? raw[0] : raw)?.trim() ?? '';
  if (userIdProblem(name) !== undefined) return 'bad_header';
  const emailRaw = auth.emailHeader ? headers[auth.emailHeader] : undefined;
  const email = cleanEmail(Array.isArray(emailRaw) ? emailRaw[0] : emailRaw);
  const admin = auth.adminNames.includes(name) || (email !== undefined && auth.adminEmails.includes(email.toLowerCase()));
  return { id: name, name: cleanName(name) ?? name, ...(email ? { email } : {}), admin };
}
