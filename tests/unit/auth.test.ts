import {
  cleanEmail,
  cleanName,
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
  readSession,
  TrustedProxies,
  userFromHeaders,
  userIdProblem,
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

  it('names its sign-in, so logout can end it; a cookie without one (an earlier release’s) is nobody’s', () => {
    const user = { id: 'alice', name: 'Alice', admin: false };
    expect(readSession(encodeSession(user, 60_000, 1_000, 'sign-in-1'), 2_000)).toEqual({ user, id: 'sign-in-1', expiresAt: 61_000 });
    expect(encodeSession(user, 60_000)).not.toBe(encodeSession(user, 60_000));
    const older = Buffer.from(JSON.stringify({ ...user, exp: 61_000 })).toString('base64url');
    expect(decodeSession(older, 2_000)).toBeUndefined();
  });
});

describe('what sign-in takes of an identity', () => {
  it('takes user ids of 1 to 255 characters with no control characters and no white space at the ends', () => {
    expect(userIdProblem('alice')).toBeUndefined();
    expect(userIdProblem('auth0|5f3c…')).toBeUndefined();
    expect(userIdProblem('x'.repeat(255))).toBeUndefined();
    expect(userIdProblem('x'.repeat(256))).toBe('is longer than 255 characters');
    expect(userIdProblem('')).toBe('is empty');
    expect(userIdProblem(LOCAL_OWNER)).toBe('is empty');
    expect(userIdProblem('a\u0000b')).toBe('holds control characters');
    expect(userIdProblem('a\u0085b')).toBe('holds control characters');
    expect(userIdProblem(' alice')).toBe('starts or ends with white space');
  });

  it('cleans names and leaves out implausible emails', () => {
    expect(cleanName('  Rosa\u0000\u001b[31m  Admin\n')).toBe('Rosa [31m Admin');
    expect(cleanName('x'.repeat(500))).toHaveLength(200);
    expect(cleanName('\u0000\u0001')).toBeUndefined();
    expect(cleanEmail(' Rosa@Example.com ')).toBe('Rosa@Example.com');
    for (const bad of ['rosa', 'a@b@c', 'ro sa@example.com', 'rosa@example.com\r\nX: y', `${'x'.repeat(320)}@example.com`, 42])
      expect(cleanEmail(bad)).toBeUndefined();
  });

  it('accepts an https issuer, and plain http only on this machine', () => {
    const oidc = (issuer: string) =>
      load({ AUTH_MODE: 'oidc', OIDC_ISSUER: issuer, OIDC_CLIENT_ID: 'stepwise', PUBLIC_ORIGIN: 'https://chat.example.com', SESSION_SECRET: 'x'.repeat(32) });
    for (const issuer of ['https://sso.example.com', 'http://127.0.0.1:8080', 'http://localhost:8080/realms/dev', 'http://[::1]:9000'])
      expect(oidc(issuer).auth).toMatchObject({ issuer });
    for (const issuer of ['http://sso.example.com', 'http://10.0.0.5:8080', 'http://localhost.example.com'])
      expect(() => oidc(issuer)).toThrow(/^Invalid OIDC_ISSUER: must be an https URL/);
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
