import type { AuthUser, By } from '@stepwise/shared-types';
import { LOCAL_OWNER, type SessionOwner } from '../store/store.ts';

/** A person using the server: who owns what they make, and whether they may see everyone's chats. */
export type User = AuthUser;

/** The one user of AUTH_MODE none and token: every chat is theirs (chats from before users, too). */
export const LOCAL_USER: User = Object.freeze({ id: LOCAL_OWNER, name: 'Local user', admin: false });

/** What a new session records of the user who makes it. */
export function ownerOf(user: User): SessionOwner {
  return { id: user.id, name: user.name };
}

/** How an owner is named to people: their name, else their id; the chats from before sign-in made with no name are "Before sign-in". */
export function ownerLabel(owner: SessionOwner): string {
  return owner.name ?? (owner.id === LOCAL_OWNER ? 'Before sign-in' : owner.id);
}

/** Who did something, for events (`by`): only when there are several users to tell apart. */
export function byOf(user: User | undefined): By | undefined {
  return user && user.id !== LOCAL_OWNER ? { id: user.id, name: user.name } : undefined;
}

/** What a user may do with a chat: `own` (everything), `watch` (an admin: read it, stop its run), or nothing. */
export type ChatAccess = 'own' | 'watch' | 'none';

/** How `user` may use a chat owned by `owner`. */
export function chatAccess(user: User, owner: string): ChatAccess {
  if (user.id === owner) return 'own';
  return user.admin ? 'watch' : 'none';
}

/**
 * Whether a user may change the settings in the app: in AUTH_MODE none (this machine only) and
 * token (whoever holds the token runs the server), the one user; with sign-in, admins only.
 */
export function isSettingsAdmin(user: User | undefined, mode: 'none' | 'token' | 'oidc' | 'header'): boolean {
  if (!user) return false;
  return mode === 'none' || mode === 'token' ? true : user.admin;
}
