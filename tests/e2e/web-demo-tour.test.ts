// A newcomer's tour of the demo in Chromium: each strategy's README request answered truthfully,
// on a screen with no raw JSON and nothing "running" once the run ended (each screenshot goes to
// tests/artifacts/tour-STRATEGY.png; docs/screenshots/STRATEGY.png are copies of them); then what
// people expect of a chat: copy, Escape to stop, rename.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

/** The README's demo request of each strategy, and what its answer must say. */
const TOUR = [
  { strategy: 'roa', label: 'Reason, act, observe', request: 'First compute 12*7, then add 15, divide by 3, subtract 4', answer: /\*?29\*?/ },
  { strategy: 'plan_execute', label: 'Plan and execute', request: 'What time is it, and what is 2^10?', answer: /1024[\s\S]*It is now/ },
  {
    strategy: 'autonomous',
    label: 'Autonomous (todo list)',
    request: 'Tell three short facts about octopus and keep a list',
    answer: /Fact 3 about “octopus”/,
  },
  {
    strategy: 'solver',
    label: 'Staged solver',
    request: 'What is (17+25)*3, then subtract 6?',
    answer: /120: \(\(17\+25\)\*3\) - 6 = 120, computed with the calculator, checked again and confirmed by the evaluator/,
  },
  { strategy: 'research', label: 'Research (task graph)', request: 'What time is it, and what is 12*7?', answer: /12\*7 = 84[\s\S]*It is now/ },
];

async function openChat(server: TestServer, viewport = { width: 1280, height: 800 }) {
  page = await web.page(server.url, { viewport, permissions: ['clipboard-read', 'clipboard-write'] });
}

/** Raw machinery on screen: visible text blocks that are JSON objects, and visible "running" badges. */
async function machinery(): Promise<{ json: string[]; running: number }> {
  return page.evaluate(() => {
    const visible = (element: Element) => (element as HTMLElement).offsetParent !== null && !element.closest('details:not([open]) > :not(summary)');
    const json = [...document.querySelectorAll('pre, code')]
      .filter(visible)
      .map((element) => element.textContent?.trim() ?? '')
      .filter((text) => /^[{[]\s*"/.test(text));
    const running = [...document.querySelectorAll('.badge')].filter((badge) => visible(badge) && badge.textContent?.trim() === 'running').length;
    return { json, running };
  });
}

describe('the demo, strategy by strategy, in Chromium', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it.each(TOUR)(
    '$strategy answers its README request truthfully, with no JSON and nothing running on screen afterwards',
    async ({ strategy, label, request, answer }) => {
      await openChat(await web.demo());
      await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label });
      await ask(page, request);
      const end = page.getByTestId('run-end');
      await end.waitFor({ timeout: 60_000 });
      expect(await end.getAttribute('class')).toMatch(/run-end-answered/);
      const answerText = await page.getByTestId('assistant-turn').last().innerText();
      expect(answerText).toMatch(answer);
      expect(await machinery()).toEqual({ json: [], running: 0 });
      // Once the chat has started, the options are one line: the conversation keeps the screen.
      await page.getByRole('button', { name: /^Agent ·/ }).waitFor();
      expect(await page.getByRole('combobox', { name: 'Strategy' }).isVisible()).toBe(false);
      await screenshot(page, `tour-${strategy}.png`);
    },
  );

  it('research: the report opens in the app, its work files are folded under "Work files (N)"', async () => {
    await openChat(await web.demo());
    await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: 'Research (task graph)' });
    await ask(page, 'What is 12*7?');
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    const work = page.getByTestId('work-files');
    expect(await work.locator('summary').innerText()).toMatch(/^Work files \(\d+\)$/);
    expect(await work.getAttribute('open')).toBeNull();
    await page.getByRole('button', { name: 'Download RESEARCH_STATE.md' }).waitFor();
    await page.getByTestId('open-report').click();
    const report = page.locator('.report-viewer .report');
    await report.waitFor();
    expect(await report.locator('h1').innerText()).toBe('Report: What is 12*7?');
    expect(await report.innerText()).toContain('12*7 = 84');
  });
});

describe('what people expect of a chat', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('copies an answer and a code block, Escape stops a run, and a chat can be renamed', async () => {
    await openChat(await web.demo({ DEMO_DELAY_MS: '40' }));
    await ask(page, 'What is 6*7?');
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Copy the answer' }).last().click();
    await page.getByRole('button', { name: 'Copy the answer' }).last().filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toMatch(/42/);

    // A slow run, stopped with Escape.
    await ask(page, 'First compute 12*7, then add 15, divide by 3, subtract 4');
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByTestId('run-end').filter({ hasText: 'Stopped' }).waitFor({ timeout: 60_000 });

    // Rename it from the chat list; the new name stays after a reload.
    await page.getByRole('button', { name: /^Rename “What is 6\*7\?”/ }).click();
    await page.getByRole('textbox', { name: 'New name for the chat' }).fill('Sums for Friday');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('navigation', { name: 'Chats' }).getByText('Sums for Friday').waitFor();
    await page.reload();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.getByRole('navigation', { name: 'Chats' }).getByText('Sums for Friday').waitFor();
  });

  it('a code block in an answer has its own Copy button', async () => {
    await openChat(await web.demo());
    // The demo answers a named tool's result as a code block: list the chat's files.
    await page.setInputFiles('input[type=file]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('one\ntwo\n') });
    await page.getByRole('button', { name: 'Download notes.txt' }).waitFor();
    await ask(page, 'Which files are attached?');
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    const copy = page.getByRole('button', { name: 'Copy code' }).last();
    await copy.click();
    await copy.filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toContain('notes.txt');
  });
});
