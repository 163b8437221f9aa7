import {
  ConfigError,
  chatAccess,
  decideAccess,
  decodeSession,
  encodeSession,
  isLoopbackAddress,
  LOCAL_OWNER,
  LOCAL_USER,
  loadConfig,
  RunSlots,
  TrustedProxies,
  userFromHeaders,
} from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

const load = (env: Record<string, string>) => loadConfig(env, { promptsDir: '/prompts' });
const headerAuth = {
  mode: 'header' as const,
  header: 'x-forwarded-user',
  emailHeader: 'x-forwarded-email',
  trustedProxies: ['10.0.0.0/8', 'fd00::/64', '127.0.0.1'],
  adminNames: ['rosa'],
  adminEmails: ['ops@acme.example'],
};

describe('AUTH_MODE', () => {
  it('is token with AUTH_TOKEN and none without, and says what each mode is missing', () => {
    expect(load({}).auth).toEqual({ mode: 'none' });
    expect(load({ AUTH_TOKEN: 'a-token-of-sixteen-chars' }).auth).toEqual({ mode: 'token' });
    expect(() => load({ AUTH_MODE: 'token' })).toThrow(new ConfigError('Invalid AUTH_MODE: token needs AUTH_TOKEN'));
    expect(() => load({ AUTH_MODE: 'oidc', OIDC_ISSUER: 'https://sso.example.com' })).toThrow(/oidc needs OIDC_CLIENT_ID, PUBLIC_ORIGIN, SESSION_SECRET/);
    expect(() => load({ AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User' })).toThrow(/header needs TRUSTED_PROXIES/);
    expect(() => load({ AUTH_MODE: 'sso' })).toThrow(/AUTH_MODE: must be none, token, oidc or header/);
    expect(() => load({ AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TRUSTED_PROXIES/);
    expect(() => load({ SESSION_SECRET: 'short' })).toThrow(/^Invalid SESSION_SECRET: must be at least 32 characters$/);
  });

  it('reads the OIDC settings, with the redirect URI under PUBLIC_ORIGIN', () => {
    const config = load({
      AUTH_MODE: 'oidc',
      OIDC_ISSUER: 'https://sso.example.com/realms/acme',
      OIDC_CLIENT_ID: 'stepwise',
      PUBLIC_ORIGIN: 'https://chat.example.com/',
      SESSION_SECRET: 'x'.repeat(32),
      OIDC_ADMIN_EMAILS: 'Ops@Example.com, rosa@example.com',
    });
    expect(config.auth).toMatchObject({
      mode: 'oidc',
      redirectUri: 'https://chat.example.com/auth/callback',
      adminEmails: ['ops@example.com', 'rosa@example.com'],
      scopes: 'openid profile email',
      sessionMaxAgeMs: 12 * 3_600_000,
    });
  });
});

describe('the sign-in cookie’s content', () => {
  it('reads back the user it was made for until it expires', () => {
    const user = { id: 'alice', name: 'Alice', email: 'alice@example.com', admin: false };
    const value = encodeSession(user, 60_000, 1_000);
    expect(decodeSession(value, 2_000)).toEqual(user);
    expect(decodeSession(value, 61_001)).toBeUndefined();
    expect(decodeSession('not base64 json', 2_000)).toBeUndefined();
    expect(decodeSession(Buffer.from(JSON.stringify({ id: 'x', exp: 10_000 })).toString('base64url'), 2_000)).toBeUndefined();
  });
});

describe('the auth proxy’s header', () => {
  const proxies = new TrustedProxies(headerAuth.trustedProxies);

  it('is believed from listed addresses and ranges only, IPv4 on a dual-stack socket included', () => {
    expect(proxies.trusts('10.1.2.3')).toBe(true);
    expect(proxies.trusts('::ffff:10.1.2.3')).toBe(true);
    expect(proxies.trusts('fd00::1')).toBe(true);
    expect(proxies.trusts('127.0.0.1')).toBe(true);
    expect(proxies.trusts('127.0.0.2')).toBe(false);
    expect(proxies.trusts('11.0.0.1')).toBe(false);
    expect(proxies.trusts('fd01::1')).toBe(false);
    expect(proxies.trusts(undefined)).toBe(false);
  });

  it('names the user, their email, and whether they are an admin', () => {
    expect(userFromHeaders({ 'x-forwarded-user': 'alice', 'x-forwarded-email': 'alice@acme.example' }, '10.0.0.5', headerAuth, proxies)).toEqual({
      id: 'alice',
      name: 'alice',
      email: 'alice@acme.example',
      admin: false,
    });
    expect(userFromHeaders({ 'x-forwarded-user': 'rosa' }, '10.0.0.5', headerAuth, proxies)).toMatchObject({ admin: true });
    // A name is an id: another case is another user, and an email header equal to an admin's name is no admin's.
    expect(userFromHeaders({ 'x-forwarded-user': 'Rosa' }, '10.0.0.5', headerAuth, proxies)).toMatchObject({ admin: false });
    expect(userFromHeaders({ 'x-forwarded-user': 'mallory', 'x-forwarded-email': 'rosa' }, '10.0.0.5', headerAuth, proxies)).toMatchObject({ admin: false });
    expect(userFromHeaders({ 'x-forwarded-user': 'ops', 'x-forwarded-email': 'OPS@acme.example' }, '10.0.0.5', headerAuth, proxies)).toMatchObject({
      admin: true,
    });
    expect(userFromHeaders({ 'x-forwarded-user': 'alice' }, '192.168.1.1', headerAuth, proxies)).toBe('untrusted_address');
    expect(userFromHeaders({}, '10.0.0.5', headerAuth, proxies)).toBe('no_header');
    expect(userFromHeaders({ 'x-forwarded-user': '  ' }, '10.0.0.5', headerAuth, proxies)).toBe('bad_header');
    expect(userFromHeaders({ 'x-forwarded-user': 'a\u0000b' }, '10.0.0.5', headerAuth, proxies)).toBe('bad_header');
  });
});

describe('who may use a chat', () => {
  it('is its owner; an admin may watch; anyone else may not', () => {
    expect(chatAccess({ id: 'alice', name: 'Alice', admin: false }, 'alice')).toBe('own');
    expect(chatAccess({ id: 'rosa', name: 'Rosa', admin: true }, 'alice')).toBe('watch');
    expect(chatAccess({ id: 'bob', name: 'Bob', admin: false }, 'alice')).toBe('none');
    expect(chatAccess(LOCAL_USER, LOCAL_OWNER)).toBe('own');
    // The chats of before sign-in are nobody's whose name is `local`.
    expect(chatAccess({ id: 'local', name: 'local', admin: false }, LOCAL_OWNER)).toBe('none');
  });

  it('gives each user at most MAX_RUNS_PER_USER run slots, and frees them', () => {
    const slots = new RunSlots(10, 10, 2);
    const one = slots.tryAcquire('a', 'alice');
    const two = slots.tryAcquire('b', 'alice');
    expect(slots.tryAcquire('c', 'alice')).toBe('user_busy');
    expect(typeof slots.tryAcquire('c', 'bob')).toBe('function');
    (one as () => void)();
    expect(typeof slots.tryAcquire('c', 'alice')).toBe('function');
    expect(typeof two).toBe('function');
  });
});

describe('the access check without sign-in (AUTH_MODE=none)', () => {
  const request = (remoteAddress: string) =>
    ({ headers: { host: '127.0.0.1:8787' }, raw: { url: '/api/sessions' }, routeOptions: { config: {} }, socket: { remoteAddress } }) as never;
  const config = load({ HOST: '0.0.0.0' });

  it('lets this machine in as the local user', () => {
    for (const address of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']) expect(decideAccess(request(address), config)).toEqual({ user: LOCAL_USER });
  });

  it('refuses a client from another address, saying how to open the server to others', () => {
    const decision = decideAccess(request('192.0.2.7'), config);
    expect(decision).toMatchObject({ refusal: { status: 401, code: 'unauthorized', message: expect.stringContaining('AUTH_MODE=none') } });
    expect(isLoopbackAddress('::ffff:192.0.2.7')).toBe(false);
  });
});
