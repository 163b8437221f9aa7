import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, live, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;
let llm: ScriptedLlmServer;
let server: TestServer;

// The first server of the file opens the shared embedded database: seconds on a busy machine.
beforeEach(async () => {
  ({ llm, server } = await web.scripted({ LLM_MODEL: 'gpt-4o-mini' }));
  page = await web.page(server.url, { viewport: { width: 1100, height: 900 } });
}, 120_000);

describe('the web app across reloads', { timeout: BROWSER_TEST_TIMEOUT_MS }, () => {
  it('keeps the session in the URL and rejoins a run after a reload mid-run', async () => {
    llm.enqueue(
      { text: reasonText('Thinking slowly.'), delayMs: 1_000 },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2*21' } }] },
      { text: observeText('42.', { final_answer: 'The answer is 42.' }) },
    );
    await ask(page, 'What is 2*21?');
    await page.getByTestId('step-card').first().waitFor();
    const url = new URL(page.url());
    expect(url.searchParams.get('session')).toMatch(/^[0-9a-f-]{36}$/);

    await page.reload();
    await live(page);
    await page.getByText('Answered in 1 step').waitFor();
    expect(new URL(page.url()).searchParams.get('session')).toBe(url.searchParams.get('session'));
    await page.getByTestId('user-turn').getByText('What is 2*21?').waitFor();
    expect(await page.getByTestId('assistant-turn').textContent()).toContain('The answer is 42.');
    expect(await page.getByTestId('tool-card').textContent()).toContain('42');
  });

  it('shows a pending question again after a reload, and the answer finishes the run', async () => {
    llm.enqueue(...answerAfter('Need a city.', [{ id: 'ask', name: 'request_input', arguments: { question: 'Which city?' } }], 'Oslo.', 'Oslo weather.'));
    await ask(page, 'Weather?');
    await page.getByRole('alertdialog').getByText('Which city?').waitFor();
    await page.reload();
    await live(page);
    await page.getByRole('alertdialog').getByText('Which city?').waitFor();
    await page.getByRole('textbox', { name: 'Your answer' }).fill('Oslo');
    await page.getByRole('button', { name: 'Answer' }).click();
    await page.getByText('Answered in 1 step').waitFor();
    expect(await page.getByTestId('assistant-turn').textContent()).toContain('Oslo weather.');
  });

  it('lists past sessions, opens one with its runs folded, starts new chats and deletes', async () => {
    llm.enqueue(...answerAfter('Multiply.', [{ name: 'calculator', arguments: { expression: '6*7' } }], '42.', 'Forty-two.'));
    await ask(page, 'Six times seven');
    await page.getByText('Answered in 1 step').waitFor();
    const chats = page.getByRole('navigation', { name: 'Chats' });
    await chats.getByRole('link', { name: /Six times seven/ }).waitFor();

    await chats.getByRole('link', { name: 'New chat' }).click();
    await live(page);
    expect(new URL(page.url()).searchParams.get('session')).not.toBeNull();
    expect(await page.getByTestId('step-card').count()).toBe(0);

    await chats.getByRole('link', { name: /Six times seven/ }).click();
    await live(page);
    await page.getByText('Answered in 1 step').waitFor();
    // A replayed run's last step folds once the response is complete, which the replay sends last.
    await page.locator('[data-testid="step-card"]:not([open])').first().waitFor();
    const step = page.getByTestId('step-card').first();
    expect(await step.getAttribute('open')).toBeNull();
    await page.getByTestId('user-turn').getByText('Six times seven').waitFor();

    const deletedId = new URL(page.url()).searchParams.get('session')!;
    await chats.getByRole('button', { name: 'Delete “Six times seven”' }).click();
    // Deleting the open session leaves it for a new chat.
    await page.waitForURL((current) => current.searchParams.get('session') !== deletedId);
    await live(page);
    expect((await fetch(`${server.url}/api/sessions/${deletedId}`)).status).toBe(404);
    await chats.getByText('New chat').first().waitFor();
    expect(await chats.getByRole('link', { name: /Six times seven/ }).count()).toBe(0);
  });
});
