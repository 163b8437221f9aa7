const KEY = 'stepwise.token';

/** The access token the user gave once (when the server asks for one), kept in this browser. */
export const accessToken = {
  get(): string | undefined {
    try {
      return localStorage.getItem(KEY) ?? undefined;
    } catch {
      return undefined;
    }
  },
  set(token: string): void {
    localStorage.setItem(KEY, token.trim());
  },
  clear(): void {
    localStorage.removeItem(KEY);
  },
};

/** Headers for REST calls. */
export function authHeaders(): Record<string, string> {
  const token = accessToken.get();
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** Subprotocols for the socket: browsers cannot set headers on it, so the token rides along here. */
export function socketProtocols(): string[] | undefined {
  const token = accessToken.get();
  return token ? ['stepwise', `bearer.${token}`] : undefined;
}

/** Thrown when the server wants a (different) token. */
export class AuthRequiredError extends Error {
  constructor() {
    super('This Stepwise needs an access token');
    this.name = 'AuthRequiredError';
  }
}

/** Thrown when the server wants the person to sign in: at `loginUrl` (AUTH_MODE oidc), or through the sign-in proxy (header, no URL). */
export class SignInRequiredError extends Error {
  constructor(readonly loginUrl: string | undefined) {
    super('Sign in to use this Stepwise');
    this.name = 'SignInRequiredError';
  }
}
