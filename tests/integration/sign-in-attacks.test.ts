import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, LOCAL_OWNER } from '@stepwise/backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fixtures/mcp-servers.ts';
import { OIDC_CLIENT, TestOidcProvider } from '../fixtures/oidc-provider.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { sharedTestStore, startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

/**
 * Attacks on identity and sign-in, each against a real server (and, for OpenID Connect, a real
 * provider): each is refused with a typed error, and nothing else changes.
 */

const SESSION_SECRET = 'a-session-secret-for-the-sign-in-attacks-0123';

/** A Stepwise signing people in with the provider at `issuer`, at `origin` (the provider knows its callback). */
function oidcEnv(issuer: string, origin: string): Record<string, string> {
  return {
    AUTH_MODE: 'oidc',
    OIDC_ISSUER: issuer,
    OIDC_CLIENT_ID: OIDC_CLIENT.id,
    OIDC_CLIENT_SECRET: OIDC_CLIENT.secret,
    OIDC_SCOPES: 'openid profile email groups',
    OIDC_ADMIN_EMAILS: 'rosa@example.com',
    PUBLIC_ORIGIN: origin,
    SESSION_SECRET,
    LLM_PROVIDER: 'demo',
    PORT: String(new URL(origin).port),
  };
}

async function get(url: string, cookie?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { headers: cookie ? { cookie } : {} });
  return { status: response.status, body: await response.json() };
}

async function post(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST', headers, redirect: 'manual' });
  const text = await response.text();
  return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

describe('signing in with OpenID Connect', () => {
  let provider: TestOidcProvider;
  let server: TestServer;
  let origin: string;

  beforeAll(async () => {
    origin = `http://127.0.0.1:${await freePort()}`;
    provider = await TestOidcProvider.start([origin]);
    server = await startStepwise(oidcEnv(provider.issuer, origin));
  });
  afterAll(() =>
    closeAll(
      () => server?.close(),
      () => provider?.close(),
    ),
  );

  it('makes an admin of a verified admin email only: an unverified or unconfirmed one signs in as no admin', async () => {
    const rosa = await provider.signIn(origin, 'root');
    expect((await get(`${origin}/api/me`, rosa.cookie)).body.user).toMatchObject({ id: 'root', email: 'rosa@example.com', admin: true });
    // Mallory's provider says her address (Rosa's) is not verified; Eve's says nothing of it.
    for (const login of ['mallory', 'eve']) {
      const outcome = await provider.signIn(origin, login);
      expect(outcome.status).toBe(302);
      expect((await get(`${origin}/api/me`, outcome.cookie)).body.user).toEqual({
        id: login,
        name: expect.any(String),
        email: 'rosa@example.com',
        admin: false,
      });
      // What only an admin may do is refused, with its code.
      expect(await get(`${origin}/metrics`, outcome.cookie)).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
      expect(await post(`${origin}/api/sessions/${randomUUID()}/adopt`, { cookie: outcome.cookie! })).toMatchObject({
        status: 403,
        body: { error: { code: 'admin_only' } },
      });
    }
  });

  it('refuses an account id (sub) over 255 characters or with control characters, and cleans a display name', async () => {
    for (const login of ['x'.repeat(5000), 'local\u0001admin']) {
      const refused = await provider.signIn(origin, login);
      expect(refused).toMatchObject({ status: 400, cookie: undefined, errorCode: 'sign_in_refused' });
      expect(refused.page).toMatch(/account id \(sub\) (is longer than 255 characters|holds control characters)/);
    }
    const ctrl = await provider.signIn(origin, 'ctrl');
    expect((await get(`${origin}/api/me`, ctrl.cookie)).body.user).toEqual({
      id: 'ctrl',
      name: 'Ctrl [31mred [0m Name',
      email: 'ctrl@example.com',
      admin: false,
    });
  });

  it('ends a sign-in at logout: its cookie is refused afterwards, by every instance, and other sign-ins go on', async () => {
    const first = await provider.signIn(origin, 'alice');
    const second = await provider.signIn(origin, 'alice');
    expect((await get(`${origin}/api/sessions`, first.cookie)).status).toBe(200);
    // Another instance on the same database and secret.
    const other = await startStepwise({ ...oidcEnv(provider.issuer, origin), PORT: '0' });
    try {
      expect((await get(`${other.url}/api/sessions`, first.cookie)).status).toBe(200);
      expect((await post(`${origin}/auth/logout`, { cookie: first.cookie! })).status).toBe(302);
      for (const url of [origin, other.url]) {
        expect(await get(`${url}/api/sessions`, first.cookie)).toEqual({
          status: 401,
          body: { error: { code: 'unauthorized', message: 'This sign-in was ended (signed out); sign in again: /auth/login' } },
        });
        expect((await get(`${url}/api/me`, first.cookie)).status).toBe(401);
        expect((await get(`${url}/api/sessions`, second.cookie)).status).toBe(200);
      }
      // The web app's page still loads for the signed-out browser.
      expect((await fetch(`${origin}/`, { headers: { cookie: first.cookie! } })).status).not.toBe(401);
    } finally {
      await other.close();
    }
  });

  it('gives nobody named `local` the chats from before sign-in', async () => {
    const store = await sharedTestStore();
    const before = randomUUID();
    await store.createSession(before);
    await store.appendMessages(before, [{ role: 'user', content: 'From before sign-in' }], 0);
    const local = await provider.signIn(origin, 'local');
    expect((await get(`${origin}/api/me`, local.cookie)).body.user).toMatchObject({ id: 'local', admin: false });
    expect(await get(`${origin}/api/sessions/${before}`, local.cookie)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect((await get(`${origin}/api/sessions`, local.cookie)).body.sessions).toEqual([]);
    expect(await store.getSession(before)).toMatchObject({ owner: LOCAL_OWNER });
  });
});

describe('an OpenID provider that cannot be trusted', () => {
  let provider: TestOidcProvider | undefined;
  let server: TestServer | undefined;
  afterAll(() =>
    closeAll(
      () => server?.close(),
      () => provider?.close(),
    ),
  );

  it('refuses an ID token signed with a key the provider does not publish', async () => {
    const origin = `http://127.0.0.1:${await freePort()}`;
    provider = await TestOidcProvider.start([origin], { foreignKeys: true });
    server = await startStepwise(oidcEnv(provider.issuer, origin));
    const refused = await provider.signIn(origin, 'root');
    expect(refused).toMatchObject({ status: 400, cookie: undefined, errorCode: 'sign_in_refused' });
    expect(refused.page).toContain('Sign-in refused: The ID token is not signed with a key the provider publishes.');
    expect((await get(`${origin}/api/me`)).status).toBe(401);
  });

  it('refuses to start with an issuer on plain http beyond this machine', async () => {
    const env = { ...oidcEnv('http://sso.example.com/realms/acme', 'http://127.0.0.1:1'), PORT: '0' };
    const refusal = startStepwise(env);
    await expect(refusal).rejects.toBeInstanceOf(ConfigError);
    await expect(refusal).rejects.toThrow(
      'Invalid OIDC_ISSUER: must be an https URL (plain http only for a provider on this machine: localhost, 127.0.0.1, [::1])',
    );
  });
});

describe('behind an auth proxy', () => {
  const PROXIED = {
    AUTH_MODE: 'header',
    AUTH_HEADER: 'X-Forwarded-User',
    AUTH_EMAIL_HEADER: 'X-Forwarded-Email',
    TRUSTED_PROXIES: '127.0.0.1,::1',
    AUTH_ADMIN_USERS: 'rosa,ops@acme.example',
    LLM_PROVIDER: 'demo',
  };
  const as = (user: string, email?: string) => ({ 'x-forwarded-user': user, ...(email ? { 'x-forwarded-email': email } : {}) });
  let dataDir: string;
  let server: TestServer | undefined;
  let chatId: string;

  beforeAll(async () => {
    // A chat made before there was sign-in (AUTH_MODE none), on a database kept for the proxied server.
    dataDir = mkdtempSync(join(tmpdir(), 'stepwise-before-sign-in-'));
    const alone = await startStepwise({ DATA_DIR: dataDir, LLM_PROVIDER: 'demo' });
    try {
      const client = await TestClient.connect(alone.wsUrl);
      chatId = client.session.session_id;
      client.chat('What is 2+2?');
      await client.untilComplete();
      await client.close();
    } finally {
      await alone.close();
    }
    server = await startStepwise({ ...PROXIED, DATA_DIR: dataDir });
  });
  afterAll(() =>
    closeAll(
      () => server?.close(),
      () => dataDir && rmSync(dataDir, { recursive: true, force: true }),
    ),
  );

  it('makes admins by exact user name or by email, never by an email header equal to an admin’s name', async () => {
    const me = async (headers: Record<string, string>) => (await (await fetch(`${server!.url}/api/me`, { headers })).json()).user;
    expect(await me(as('rosa'))).toMatchObject({ admin: true });
    expect(await me(as('someone', 'OPS@acme.example'))).toMatchObject({ admin: true });
    for (const headers of [as('mallory', 'rosa'), as('mallory', 'Rosa'), as('ROSA'), as('Rosa')]) {
      expect(await me(headers)).toMatchObject({ admin: false });
      expect(await post(`${server!.url}/api/sessions/${chatId}/adopt`, headers)).toMatchObject({ status: 403, body: { error: { code: 'admin_only' } } });
    }
  });

  it('keeps the chats from before sign-in from a user named `local` until an admin adopts one', async () => {
    const url = server!.url;
    const call = async (user: string, path: string) => {
      const response = await fetch(`${url}${path}`, { headers: as(user) });
      return { status: response.status, body: await response.json() };
    };
    expect(await call('local', `/api/sessions/${chatId}`)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect((await call('local', '/api/sessions')).body.sessions).toEqual([]);
    const everyone = (await call('rosa', '/api/sessions?scope=all')).body.sessions;
    expect(everyone).toEqual([expect.objectContaining({ id: chatId, title: 'What is 2+2?', owner: { id: LOCAL_OWNER, name: 'Local user' } })]);

    expect(await post(`${url}/api/sessions/${chatId}/adopt`, as('local'))).toMatchObject({ status: 403, body: { error: { code: 'admin_only' } } });
    expect(await post(`${url}/api/sessions/${chatId}/adopt`, as('rosa'))).toMatchObject({
      status: 200,
      body: { id: chatId, title: 'What is 2+2?', owner: { id: 'rosa', name: 'rosa' } },
    });
    expect(await post(`${url}/api/sessions/${chatId}/adopt`, as('rosa'))).toMatchObject({ status: 409, body: { error: { code: 'already_owned' } } });
    expect(await post(`${url}/api/sessions/${randomUUID()}/adopt`, as('rosa'))).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    // Hers now, with its history; still nobody else's.
    expect(await call('rosa', `/api/sessions/${chatId}`)).toMatchObject({ status: 200, body: { messages: [{ content: 'What is 2+2?' }, {}] } });
    expect((await call('local', `/api/sessions/${chatId}`)).status).toBe(404);
  });
});
