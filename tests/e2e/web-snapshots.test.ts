import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp, openOptions } from './browser.ts';

const web = useWebApp();
let page: Page;

async function open() {
  const server = await web.demo({ DEMO_DELAY_MS: '1' });
  page = await web.page(server.url);
}

/** Sends a message and waits until its answer is shown (the composer is free again). */
async function send(text: string, answers: number) {
  await ask(page, text);
  await page
    .getByTestId('assistant-turn')
    .nth(answers - 1)
    .waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
}

const dialog = () => page.getByRole('dialog', { name: 'Snapshots' });

describe('snapshots in the web app', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('saves a snapshot, rolls back to it after two more messages, and folds what came after under a divider', async () => {
    await open();
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await send('What is 6*7?', 1);
    await openOptions(page);
    await page.getByRole('switch', { name: 'Agent mode' }).uncheck();

    await page.getByRole('button', { name: 'Snapshots' }).click();
    await dialog().getByRole('textbox', { name: 'Snapshot label' }).fill('Checkpoint');
    await dialog().getByRole('button', { name: 'Save snapshot' }).click();
    await dialog().getByTestId('snapshot').filter({ hasText: 'Checkpoint' }).waitFor();
    // Saved is a success, said as one: not in the colour of a failure.
    expect(await page.locator('.notice').getAttribute('class')).toContain('notice-success');
    await page.keyboard.press('Escape');

    await send('Tell me something', 2);
    await send('And something else', 3);
    await page.getByRole('button', { name: 'Snapshots' }).click();
    await dialog().getByTestId('snapshot').filter({ hasText: 'Checkpoint' }).getByRole('button', { name: 'Roll back' }).click();
    await dialog().getByTestId('snapshot').filter({ hasText: 'Checkpoint' }).getByRole('button', { name: 'Yes, roll back' }).click();
    await page.getByTestId('rollback-divider').filter({ hasText: 'Rolled back to “Checkpoint”' }).waitFor();
    // The list now has the step's end, the snapshot, and the state before the rollback.
    await dialog().getByTestId('snapshot').filter({ hasText: 'Before rolling back' }).waitFor();
    const kinds = await dialog()
      .getByTestId('snapshot')
      .evaluateAll((items) => items.map((item) => item.getAttribute('data-kind')));
    expect([...kinds].sort()).toEqual(['manual', 'rollback', 'step']);
    await page.keyboard.press('Escape');

    const folded = page.getByTestId('rolled-back');
    expect(await folded.count()).toBe(1);
    expect(await folded.textContent()).toContain('Tell me something');
    expect(await folded.textContent()).toContain('And something else');
    await screenshot(page, 'rolled-back.png');
  });

  it('a run rolled back to one of its steps says so and offers Continue, which goes on from that step', async () => {
    await open();
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await send('First compute 12*7, then add 15, divide by 3, subtract 4', 1);
    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').filter({ hasText: 'Answered in 4 steps' }).waitFor();
    // An answered run offers no Continue.
    expect(await firstRun.getByTestId('run-continue').count()).toBe(0);

    await page.getByRole('button', { name: 'Snapshots' }).click();
    const step2 = dialog().locator('[data-kind="step"]').filter({ hasText: 'End of step 2' });
    await step2.getByRole('button', { name: 'Roll back' }).click();
    await step2.getByRole('button', { name: 'Yes, roll back' }).click();
    await page.getByTestId('rollback-divider').filter({ hasText: 'the end of step 2' }).waitFor();
    await page.keyboard.press('Escape');

    await firstRun
      .getByTestId('run-end')
      .filter({ hasText: /^Rolled back to step 2/ })
      .waitFor();
    await firstRun.getByRole('button', { name: 'Continue' }).click();
    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').filter({ hasText: 'Answered in 4 steps' }).waitFor();
    const steps = await secondRun.getByTestId('step-card').allTextContents();
    expect(steps.map((text) => /Step (\d+)/.exec(text)?.[1])).toEqual(['3', '4']);
    await page.getByTestId('assistant-turn').filter({ hasText: 'The result is 29' }).last().waitFor();
    await screenshot(page, 'rolled-back-continued.png');
  });

  it('rewinds a finished run to the end of a step and goes on from there', async () => {
    await open();
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await send('First compute 12*7, then add 15, divide by 3, subtract 4', 1);
    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').filter({ hasText: 'Answered in 4 steps' }).waitFor();

    const step2 = firstRun.getByTestId('step-card').nth(1);
    await step2.locator('summary').first().click();
    await step2.getByRole('button', { name: 'Rewind to here' }).click();
    // A rewind asks first: it changes what the conversation is.
    await step2.getByRole('group', { name: /Roll the conversation back to the end of step 2\?/ }).waitFor();
    await screenshot(page, 'rewind-confirm.png');
    await step2.getByRole('button', { name: 'Rewind', exact: true }).click();

    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').filter({ hasText: 'Answered in 4 steps' }).waitFor();
    expect(await secondRun.getByTestId('run-continued').count()).toBe(1);
    const steps = await secondRun.getByTestId('step-card').allTextContents();
    expect(steps.map((text) => /Step (\d+)/.exec(text)?.[1])).toEqual(['3', '4']);
    await page.getByTestId('rollback-divider').filter({ hasText: 'the end of step 2' }).waitFor();
    // The run rewound no longer says it answered: it says where it was rolled back to.
    expect(await firstRun.getByTestId('run-end').textContent()).toMatch(/^Rolled back to step 2/);
    await page.getByTestId('assistant-turn').filter({ hasText: 'The result is 29' }).last().waitFor();
  });
});
