import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, live, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe('an autonomous run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the todo list filling in, the guidance between iterations, and lets a person edit the list once the run is over', async () => {
    page = await web.demoWith('Autonomous (todo list)');
    await ask(page, 'Tell three short facts about octopus and keep a list');
    await page.getByTestId('run-end').waitFor();
    const list = page.getByTestId('todo-list');
    await expect(list.textContent()).resolves.toContain('3 of 3 done');
    expect(await list.locator('[data-testid="todo"][data-status="completed"]').count()).toBe(3);
    const iterations = page.getByTestId('iteration');
    expect(await iterations.count()).toBeGreaterThanOrEqual(4);
    expect(await page.getByTestId('guidance-note').count()).toBe(await iterations.count());
    await expect(iterations.nth(1).getByTestId('guidance-note').locator('summary').textContent()).resolves.toMatch(/^Steering: to-dos are open/);
    // The prompt's own words stay folded: no machinery on screen.
    expect(await iterations.nth(1).getByTestId('guidance-note').locator('pre').isVisible()).toBe(false);
    await expect(page.getByTestId('run').textContent()).resolves.toContain('“octopus” has 7 letters.');
    await expect(page.getByTestId('run').textContent()).resolves.not.toContain('[WORKFLOW_COMPLETE]');
    await screenshot(page, 'autonomous-run.png');

    // Between runs the list is the person's to change: add a todo, then reload: it is still there.
    await page.getByRole('textbox', { name: 'New to-do' }).fill('Fact 4 about “octopus”');
    await page.getByRole('button', { name: 'Add' }).click();
    await list.locator('[data-testid="todo"][data-status="pending"]').waitFor();
    await page.reload();
    await live(page);
    await page.locator('[data-testid="todo"][data-status="pending"]').waitFor();
    await expect(page.getByTestId('todo-list').textContent()).resolves.toContain('3 of 4 done');
  });
});
