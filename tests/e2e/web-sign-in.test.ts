// Signing in with OpenID Connect in Chromium, against a real provider (oidc-provider): its login
// form filled in, consent given, the person's name in the header; the sign-in cookie accepted by a
// second instance; an admin's "All chats"; signing out.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { freePort } from '../fixtures/mcp-servers.ts';
import { OIDC_CLIENT, TestOidcProvider } from '../fixtures/oidc-provider.ts';
import { freshPostgresDatabase, postgresUrl } from '../helpers/databases.ts';
import { startStepwiseProcess } from '../helpers/process.ts';
import { startStepwise } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useBrowser } from './browser.ts';

let browser: Browser;
let context: BrowserContext | undefined;
let provider: TestOidcProvider | undefined;
/** An instance of Stepwise: in this process, or a process of its own. */
type Instance = { url: string; close(): unknown };
let first: Instance | undefined;
let second: Instance | undefined;
let database: { drop: () => Promise<void> } | undefined;

useBrowser(
  (launched) => (browser = launched),
  () => [context, first, second, provider, { close: () => dropDatabase() }],
);

async function dropDatabase(): Promise<void> {
  const dropping = database;
  database = undefined;
  await dropping?.drop();
}

const pg = postgresUrl();
const redisUrl = process.env.TEST_REDIS_URL;

const SESSION_SECRET = 'a-session-secret-shared-by-every-instance-0123';

/**
 * Two instances of one Stepwise, both known to the provider at the first one's public origin: two
 * processes on PostgreSQL and Redis when the test command provides them, else two servers in this
 * process on one database.
 */
async function startInstances(options: { cluster?: boolean } = {}): Promise<{ origin: string }> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  provider = await TestOidcProvider.start([origin]);
  const env = {
    AUTH_MODE: 'oidc',
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: OIDC_CLIENT.id,
    OIDC_CLIENT_SECRET: OIDC_CLIENT.secret,
    OIDC_SCOPES: 'openid profile email groups',
    OIDC_ADMIN_GROUP: 'stepwise-admins',
    PUBLIC_ORIGIN: origin,
    SESSION_SECRET,
    LLM_PROVIDER: 'demo',
  };
  if (options.cluster && pg && redisUrl) {
    const fresh = await freshPostgresDatabase(pg);
    await fresh.db.close();
    database = fresh;
    const cluster = { ...env, DATABASE_URL: fresh.url, REDIS_URL: redisUrl };
    const [a, b] = await Promise.all([
      startStepwiseProcess({ ...cluster, INSTANCE_ID: 'a', PORT: String(port) }),
      startStepwiseProcess({ ...cluster, INSTANCE_ID: 'b' }),
    ]);
    first = { url: a.url, close: () => a.kill() };
    second = { url: b.url, close: () => b.kill() };
    return { origin };
  }
  first = await startStepwise({ ...env, PORT: String(port) });
  second = await startStepwise(env);
  return { origin };
}

/** Signs in through the provider's own pages: its login form, then its consent page. */
async function signIn(page: Page, login: string): Promise<void> {
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByTestId('user').waitFor();
}

describe('signing in with OpenID Connect', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('signs in at the provider, shows the person, and a second instance takes the same cookie', async () => {
    const { origin } = await startInstances({ cluster: true });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // The provider's pages load a web font; nothing leaves this machine.
    await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    const page = await context.newPage();
    await page.goto(origin);
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'sign-in.png');
    // Nothing of the app answers before signing in.
    expect((await page.request.get(`${origin}/api/sessions`)).status()).toBe(401);

    await signIn(page, 'alice');
    expect(await page.getByTestId('user').textContent()).toContain('Alice Example');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await ask(page, 'What is 2+2?');
    await page.getByTestId('run-end').waitFor();
    expect(await page.getByTestId('assistant-turn').last().innerText()).toContain('4');
    await screenshot(page, 'signed-in.png');
    const cookie = (await context.cookies(origin)).find((each) => each.name === 'stepwise_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });

    // The other instance takes the same cookie: same person, same chats.
    if (pg && redisUrl)
      expect(await (await fetch(`${second!.url}/api/health`)).json()).toMatchObject({ instance: 'b', dependencies: { database: true, redis: true } });
    const other = await context.newPage();
    await other.goto(second!.url);
    await other.getByTestId('user').waitFor();
    expect(await other.getByTestId('user').textContent()).toContain('Alice Example');
    await other.locator('.session-list').getByText('What is 2+2?').waitFor();
    const me = await other.request.get(`${second!.url}/api/me`);
    expect(await me.json()).toMatchObject({
      auth_mode: 'oidc',
      user: { id: 'alice', name: 'Alice Example', email: 'alice@example.com', admin: false },
      settings_admin: false,
    });
    // Not an admin: Settings shows what is in force, and no editor.
    await other.getByRole('button', { name: 'Settings' }).click();
    await other.getByRole('dialog', { name: 'Settings' }).getByTestId('settings-model').waitFor();
    expect(await other.getByRole('form', { name: 'Change settings' }).count()).toBe(0);
    await other.keyboard.press('Escape');

    // A cookie not signed with SESSION_SECRET is nobody's.
    const forged = Buffer.from(JSON.stringify({ id: 'root', name: 'Forged', admin: true, exp: Date.now() + 3_600_000 })).toString('base64url');
    const refused = await fetch(`${second!.url}/api/sessions`, { headers: { cookie: `stepwise_session=${forged}.bad-signature` } });
    expect(refused.status).toBe(401);

    // Signing out (and at the provider) leads back to the sign-in page.
    await page.getByRole('link', { name: 'Sign out' }).click();
    const confirm = page.getByRole('button', { name: /Yes, sign me out/i });
    await Promise.race([confirm.waitFor().then(() => confirm.click()), page.getByRole('link', { name: 'Sign in' }).waitFor()]);
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
    expect((await context.cookies(origin)).some((each) => each.name === 'stepwise_session')).toBe(false);
  });

  it('makes a member of OIDC_ADMIN_GROUP an admin, who sees everyone’s chats', async () => {
    const { origin } = await startInstances();
    // Alice's chat, in a context of her own.
    const hers = await browser.newContext();
    await hers.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    try {
      const page = await hers.newPage();
      await page.goto(origin);
      await signIn(page, 'alice');
      await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
      await ask(page, 'What is 6*7?');
      await page.getByTestId('run-end').waitFor();
      expect(await page.getByTestId('assistant-turn').last().innerText()).toContain('42');
    } finally {
      await hers.close();
    }
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    const page = await context.newPage();
    await page.goto(origin);
    await signIn(page, 'root');
    expect(await page.getByTestId('user').textContent()).toContain('admin');
    // An admin has the settings editor.
    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('form', { name: 'Change settings' }).getByRole('button', { name: 'Save changes' }).waitFor();
    await page.keyboard.press('Escape');
    const list = page.locator('.session-list');
    expect(await list.getByText('What is 6*7?').count()).toBe(0);
    await page.getByRole('button', { name: 'All chats' }).click();
    const item = list.locator('li').filter({ hasText: 'What is 6*7?' });
    await item.waitFor();
    expect(await item.locator('.session-owner').textContent()).toBe('Alice Example');
    expect(await item.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    await screenshot(page, 'admin-all-chats.png');
    // Opening it: her conversation, read-only.
    await item.getByRole('link').click();
    await page.getByTestId('watching').waitFor();
    expect(await page.getByTestId('watching').textContent()).toContain('Alice Example');
    expect(await page.getByRole('textbox', { name: 'Message' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Snapshots' }).count()).toBe(0);
    // The list stays on everyone's chats.
    await page.locator('.session-list li').filter({ hasText: 'What is 6*7?' }).locator('.session-owner').waitFor();
    expect(await page.getByRole('button', { name: 'All chats' }).getAttribute('aria-pressed')).toBe('true');
    await page.getByTestId('assistant-turn').filter({ hasText: '42' }).first().waitFor();
    await screenshot(page, 'admin-watching.png');
  });
});
