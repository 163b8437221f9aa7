import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe('continuing a run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('offers Continue under a run that reached its step limit, and the run goes on to the answer', async () => {
    const server = await web.demo({ DEMO_DELAY_MS: '1' });
    page = await web.page(server.url);
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await page.getByRole('spinbutton', { name: 'Max iterations' }).fill('2');
    await ask(page, 'First compute 12*7, then add 15, divide by 3, subtract 4');

    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').filter({ hasText: 'Max steps reached' }).waitFor();
    // The best answer says plainly what is missing, and Continue is offered.
    await page.getByTestId('assistant-turn').filter({ hasText: 'Still missing' }).waitFor();
    const offer = firstRun.getByTestId('run-continue');
    await offer.getByRole('spinbutton', { name: 'More steps' }).fill('3');
    await offer.getByRole('button', { name: 'Continue' }).click();

    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').filter({ hasText: 'Answered' }).waitFor();
    await page.getByTestId('assistant-turn').filter({ hasText: 'The result is 29' }).waitFor();
    // The continued run shows only its own steps (3 and 4), and the offer is gone from the first.
    // (Its Compare panel, once loaded, names the branch before's steps too: only the step cards count.)
    const steps = await secondRun.getByTestId('step-card').allTextContents();
    expect(steps.map((text) => /Step (\d+)/.exec(text)?.[1])).toEqual(['3', '4']);
    expect(await secondRun.getByTestId('run-continued').count()).toBe(1);
    expect(await page.getByTestId('run-continue').count()).toBe(0);
    await screenshot(page, 'continued-run.png');
  });
});
