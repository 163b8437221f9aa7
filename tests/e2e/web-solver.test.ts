import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

const dialog = () => page.getByRole('dialog', { name: 'Snapshots' });
const choose = async (answer: 'Yes' | 'No', question: string) => {
  const banner = page.getByRole('alertdialog');
  await banner.filter({ hasText: question }).waitFor();
  await banner.getByTestId('question-choices').getByRole('button', { name: answer, exact: true }).click();
  await banner.filter({ hasText: question }).waitFor({ state: 'detached' });
};

describe('a solver run in the web app', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('walks the stage pipeline with Yes / No, pauses on No, and rolls back and resumes from a snapshot in the list', async () => {
    page = await web.demoWith('Staged solver');
    // Stages advance by themselves unless the person asks to confirm each one.
    await page.getByRole('checkbox', { name: 'Auto advance' }).uncheck();
    await ask(page, 'Problem: what is (17+25)*3?');
    await choose('Yes', 'Go on to the approach evaluator?');
    await choose('Yes', 'Go on to the problem solver?');
    await choose('Yes', 'Go on to the expert evaluator?');
    const pipeline = page.getByTestId('stage-pipeline');
    expect(await pipeline.locator('[data-stage="problem_solver"]').getAttribute('data-state')).toBe('done');
    await choose('No', 'Go on to the orchestrator?');
    await page
      .getByTestId('run-end')
      .filter({ hasText: /paused/i })
      .waitFor();
    expect(await pipeline.locator('[data-stage="orchestrator"]').getAttribute('data-state')).toBe('next');
    await expect(pipeline.textContent()).resolves.toContain('loop 1 of 3');
    await screenshot(page, 'solver-paused.png');

    // A snapshot of the paused work, then a rollback to it and a resume from it, from the list.
    await page.getByRole('button', { name: 'Snapshots' }).click();
    await dialog().getByRole('button', { name: 'Save snapshot' }).click();
    // The manual snapshot: once rolled back to, a "rollback" snapshot naming it joins the list too.
    const saved = dialog().locator('[data-testid="snapshot"][data-kind="manual"]').filter({ hasText: 'loop 1 · expert_evaluator' });
    await saved.waitFor();
    await saved.getByRole('button', { name: 'Roll back' }).click();
    await saved.getByRole('button', { name: 'Yes, roll back' }).click();
    await page.getByTestId('rollback-divider').waitFor();
    await dialog().locator('[data-testid="snapshot"][data-kind="rollback"]').waitFor();
    await saved.getByRole('button', { name: 'Resume' }).click();

    await choose('Yes', 'Go on to the orchestrator?');
    // The demo's orchestrator finds the result unchecked once: a second loop, then the answer.
    await choose('Yes', 'Run solver loop 2');
    await choose('Yes', 'Go on to the expert evaluator?');
    await choose('Yes', 'Go on to the orchestrator?');
    await page.getByTestId('assistant-turn').filter({ hasText: '126' }).waitFor();
    const decisions = page.getByTestId('decision');
    expect(await decisions.evaluateAll((items) => items.map((item) => item.getAttribute('data-action')))).toEqual(['CONTINUE', 'FINAL']);
    await screenshot(page, 'solver-run.png');
  });
});
