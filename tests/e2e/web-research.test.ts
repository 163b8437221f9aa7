import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_LAUNCH_HOOK_TIMEOUT_MS, BROWSER_TEST_TIMEOUT_MS, closeBrowser, launchBrowser, screenshot } from './browser.ts';

let browser: Browser;
let context: BrowserContext | undefined;
let page: Page;
let server: TestServer | undefined;

beforeAll(async () => {
  browser = await launchBrowser();
}, BROWSER_LAUNCH_HOOK_TIMEOUT_MS);

afterAll(() => closeBrowser(browser), 30_000);

afterEach(
  () =>
    closeAll(
      () => context?.close(),
      () => server?.close(),
    ),
  30_000,
);

describe('a research run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the task board with the stage verdicts: blocked once with a follow-up task, then every stage passed', async () => {
    server = await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' });
    context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    page = await context.newPage();
    await page.goto(server.url);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();

    await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: 'Research (task graph)' });
    await ask(page, 'What is 12*7?');
    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').waitFor();
    const board = firstRun.getByTestId('task-graph');
    expect(await board.getByTestId('graph-stage').count()).toBe(3);
    await expect(board.getByTestId('stage-verdict').first().textContent()).resolves.toBe('FAIL');
    expect(await board.locator('[data-testid="graph-task"][data-status="todo"]').first().textContent()).toContain('1.3');
    await expect(board.getByTestId('verdict').first().textContent()).resolves.toContain('follow-up tasks 1.3');

    await ask(page, 'Go on');
    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').waitFor();
    const stages = secondRun.getByTestId('graph-stage');
    expect(await stages.evaluateAll((items) => items.map((item) => item.getAttribute('data-status')))).toEqual(['passed', 'passed', 'passed']);
    await page.getByTestId('assistant-turn').filter({ hasText: 'Report' }).waitFor();
    await screenshot(page, 'research-run.png');
  });
});
