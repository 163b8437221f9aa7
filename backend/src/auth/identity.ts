import type { AuthConfig } from '../config/config.ts';
import { SignInError } from '../errors.ts';
import type { User } from './user.ts';

/** The longest user id (an OIDC `sub`, a proxy's user name) Stepwise takes; OpenID Connect caps `sub` at 255. */
export const MAX_USER_ID_LENGTH = 255;
/** The longest display name kept; a longer one is cut. */
export const MAX_USER_NAME_LENGTH = 200;
/** The longest email address kept (RFC 5321's limit on a path); a longer one counts as no address. */
export const MAX_EMAIL_LENGTH = 320;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is looked for here
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed here
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

/**
 * Why a user id is refused, or undefined when it may name a user: one to MAX_USER_ID_LENGTH
 * characters, no control characters, no white space at either end. The owner of the chats from
 * before sign-in (the empty id) is none of these, so no identity can take it.
 */
export function userIdProblem(id: string): string | undefined {
  if (id.length === 0) return 'is empty';
  if (id.length > MAX_USER_ID_LENGTH) return `is longer than ${MAX_USER_ID_LENGTH} characters`;
  if (CONTROL.test(id)) return 'holds control characters';
  if (id.trim() !== id) return 'starts or ends with white space';
  return undefined;
}

/** A display name as shown: control characters become spaces, runs of white space one space, cut to MAX_USER_NAME_LENGTH. */
export function cleanName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const clean = value.replace(CONTROL_ALL, ' ').replace(/\s+/g, ' ').trim().slice(0, MAX_USER_NAME_LENGTH).trim();
  return clean || undefined;
}

/** An email address as given, or undefined when it is not a plausible one (control characters, white space, no `@`, too long). */
export function cleanEmail(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const email = value.trim();
  if (!email || email.length > MAX_EMAIL_LENGTH || CONTROL.test(email) || /\s/.test(email) || !/^[^@]+@[^@]+$/.test(email)) return undefined;
  return email;
}

type OidcAuth = Extract<AuthConfig, { mode: 'oidc' }>;

/**
 * The user an ID token's (already verified) claims name. The `sub` must be a valid user id (it is
 * refused, not cut: two long ids cut alike would be one user); names are cleaned; an email counts
 * for OIDC_ADMIN_EMAILS only when the provider says it verified it (`email_verified: true`).
 */
export function userFromClaims(claims: Record<string, unknown>, auth: OidcAuth): User {
  const sub = claims.sub;
  if (typeof sub !== 'string') throw new SignInError('The provider named no account (the ID token has no sub)');
  const problem = userIdProblem(sub);
  if (problem) throw new SignInError(`The provider's account id (sub) ${problem}; Stepwise takes ids of 1 to ${MAX_USER_ID_LENGTH} printable characters`);
  const email = cleanEmail(claims.email);
  const verified = email !== undefined && claims.email_verified === true;
  const groups = claims[auth.groupsClaim];
  const inGroup = auth.adminGroup !== undefined && Array.isArray(groups) && groups.includes(auth.adminGroup);
  const admin = inGroup || (verified && auth.adminEmails.includes(email.toLowerCase()));
  const name = cleanName(claims.name) ?? cleanName(claims.preferred_username) ?? email ?? cleanName(sub) ?? sub;
  return { id: sub, name, ...(email ? { email } : {}), admin };
}
