// Search across chats, export and read-only links in Chromium: a hit opens the chat at the match;
// a link opens read-only in a fresh browser with no sign-in, stops working once revoked, and a
// signed-in person continues it as a copy.
import { randomUUID } from 'node:crypto';
import { openSqliteStore, type Store } from '@stepwise/backend';
import type { LoggedEvent } from '@stepwise/shared-types';
import type { Browser, BrowserContext } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { answerAfter, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';
import { BROWSER_TEST_TIMEOUT_MS, screenshot, useBrowser } from './browser.ts';

let browser: Browser;
const contexts: BrowserContext[] = [];
let server: TestServer | undefined;
let llm: ScriptedLlmServer | undefined;
let store: Store | undefined;
useBrowser(
  (launched) => (browser = launched),
  () => [...contexts.splice(0), server, llm, store],
);

const PROXIED = { AUTH_MODE: 'header', AUTH_HEADER: 'X-Forwarded-User', TRUSTED_PROXIES: '127.0.0.1,::1' };
const as = (user: string) => ({ 'x-forwarded-user': user });

async function start(): Promise<TestServer> {
  store = await openSqliteStore(':memory:');
  llm = await ScriptedLlmServer.start();
  server = await startStepwise({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', ...PROXIED }, undefined, store);
  return server;
}

async function signedIn(user: string | undefined): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...(user ? { extraHTTPHeaders: as(user) } : {}) });
  contexts.push(context);
  return context;
}

/** A chat as runs leave it: each question and its answer, in the history and the log. */
async function storedChat(owner: string, turns: [string, string][]): Promise<string> {
  const id = randomUUID();
  await store!.createSession(id, { id: owner, name: owner });
  let seq = 0;
  for (const [question, answer] of turns) {
    await store!.appendMessages(id, [{ role: 'user', content: question }], seq);
    const ts = new Date().toISOString();
    for (const event of [
      { type: 'assistant_message', content: answer, seq: ++seq, ts },
      { type: 'response_complete', seq: ++seq, ts },
    ] as LoggedEvent[])
      await store!.appendEvent(id, event);
    await store!.appendMessages(id, [{ role: 'assistant', content: answer }], seq - 2);
  }
  return id;
}

describe('search, export and share in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('finds a word of an answer among the person’s chats, marks it, and opens the chat at it', async () => {
    const { url } = await start();
    const filler = Array.from({ length: 14 }, (_, index): [string, string] => [`Question ${index + 1} about tides`, `Tides answer ${index + 1}: twice a day.`]);
    const chats: string[] = [];
    for (let index = 1; index <= 12; index++)
      chats.push(
        await storedChat(
          'alice',
          index === 8 ? [...filler, ['Where did it land?', 'The zeppelin landed at Lakehurst at noon.'], ...filler] : [[`Chat ${index}`, `Answer ${index}.`]],
        ),
      );
    await storedChat('bob', [['Tell me about a zeppelin', 'A zeppelin is a rigid airship.']]);

    const page = await (await signedIn('alice')).newPage();
    await page.goto(url);
    await page.getByRole('searchbox', { name: 'Search chats' }).fill('zeppelin');
    const results = page.getByRole('list', { name: 'Search results' });
    await results.locator('mark').first().waitFor();
    expect(await results.getByRole('listitem').count()).toBe(1);
    expect(await results.locator('mark').allInnerTexts()).toEqual(['zeppelin']);
    expect(await results.innerText()).toContain('Question 1 about tides');
    await screenshot(page, 'search-results.png');

    await results.getByRole('link', { name: /The zeppelin landed/ }).click();
    const found = page.locator('.search-found');
    await found.waitFor();
    expect(new URL(page.url()).searchParams.get('session')).toBe(chats[7]);
    expect(await found.innerText()).toContain('The zeppelin landed at Lakehurst');
    // The match is on screen although the chat's end is far below it.
    await expect
      .poll(() => found.evaluate((element) => element.getBoundingClientRect().top > 0 && element.getBoundingClientRect().bottom < window.innerHeight))
      .toBe(true);
    await screenshot(page, 'search-opened-at-match.png');
    // On a phone the box sits in the chat list, behind its toggle.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.getByRole('button', { name: 'Chats' }).click();
    await page.getByRole('searchbox', { name: 'Search chats' }).fill('tides twice');
    const phoneResults = page.getByRole('list', { name: 'Search results' });
    await phoneResults.locator('mark').first().waitFor();
    // One entry per chat, its first matches under it and the rest counted.
    expect(await phoneResults.getByRole('listitem').count()).toBe(1);
    expect(await phoneResults.locator('.search-snippet').count()).toBe(3);
    expect(await phoneResults.innerText()).toContain('More matches in this chat');
    await screenshot(page, 'search-results-phone.png');
  });

  it('shares a chat read-only with a fresh browser, stops at once when revoked, and lets a signed-in person continue it as a copy', async () => {
    const { url, wsUrl } = await start();
    const client = await TestClient.connect(wsUrl, {}, { headers: as('alice') });
    llm!.enqueue(...answerAfter('Multiply.', [{ name: 'calculator', arguments: { expression: '6*7' } }], '42.', 'It is 42.'));
    client.chat('What is 6*7?', { agent_mode: true });
    await client.untilComplete();
    const id = String(client.session.session_id);
    await client.close();

    const owner = await (await signedIn('alice')).newPage();
    await owner.goto(`${url}/?session=${id}`);
    await owner.getByTestId('assistant-turn').waitFor();
    await owner.getByRole('button', { name: 'Export and share' }).click();
    const dialog = owner.getByTestId('share-dialog');
    await dialog.getByRole('button', { name: 'Create link' }).click();
    const link = await dialog.getByRole('textbox', { name: 'The new link' }).inputValue();
    expect(link).toMatch(new RegExp(`^${url}/\\?shared=[A-Za-z0-9_-]{43}$`));
    const download = owner.waitForEvent('download');
    await dialog.getByRole('button', { name: 'Download Markdown' }).click();
    expect((await download).suggestedFilename()).toBe('What-is-6-7.md');
    await screenshot(owner, 'share-dialog.png');

    // A fresh browser, signed in as nobody: the chat, read-only.
    const stranger = await (await signedIn(undefined)).newPage();
    await stranger.goto(link);
    await stranger.getByTestId('shared-chat').getByTestId('assistant-turn').waitFor();
    expect(await stranger.getByTestId('assistant-turn').innerText()).toContain('It is 42.');
    expect(await stranger.locator('.shared-banner').innerText()).toContain('What is 6*7?');
    expect(await stranger.getByText('calculator').count()).toBeGreaterThan(0);
    expect(await stranger.getByRole('textbox', { name: 'Message' }).count()).toBe(0);
    expect(await stranger.getByRole('navigation', { name: 'Chats' }).count()).toBe(0);
    await screenshot(stranger, 'shared-read-only.png');
    await stranger.setViewportSize({ width: 390, height: 800 });
    await screenshot(stranger, 'shared-read-only-phone.png');
    // Nobody signed in cannot continue it; someone signed in can, as a chat of their own.
    await stranger.getByRole('button', { name: 'Continue as a copy' }).click();
    await stranger.getByText('Sign in to this Stepwise to continue the chat as a copy').waitFor();
    const bob = await (await signedIn('bob')).newPage();
    await bob.goto(link);
    await bob.getByRole('button', { name: 'Continue as a copy' }).click();
    await bob.waitForURL((address) => address.searchParams.has('session'));
    expect(new URL(bob.url()).searchParams.get('session')).not.toBe(id);
    await bob.getByTestId('assistant-turn').waitFor();
    await bob.getByRole('textbox', { name: 'Message' }).waitFor();

    // Revoked: the link shows nothing from the next load on.
    await dialog.getByRole('listitem').getByRole('button', { name: 'Revoke' }).click();
    await dialog.getByRole('textbox', { name: 'The new link' }).waitFor({ state: 'detached' });
    await stranger.reload();
    await stranger.getByTestId('shared-gone').waitFor();
    await screenshot(stranger, 'shared-revoked.png');
  });
});
