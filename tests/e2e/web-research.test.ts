import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe('a research run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the task board with the stage verdicts, a follow-up marked, the document edited (a broken edit refused), and Run going on to every stage passed and the report', async () => {
    page = await web.demoWith('Research (task graph)');
    // Without the calculator the figure cannot be computed: the stage verifier says so (FAIL) and adds a follow-up.
    await page.getByRole('checkbox', { name: 'calculator' }).uncheck();
    await ask(page, 'What is 12*7?');
    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').waitFor();
    // Blocked by the verifier is an ending that needs the person: said so, never shown as a success.
    expect(await firstRun.getByTestId('run-end').getAttribute('class')).toContain('run-end-needs-you');
    expect(await firstRun.getByTestId('run-end').textContent()).toMatch(/^Needs you: the verifier has doubts/);
    // The board's panel loads on its first showing: wait for it, then every stage is there at once.
    const board = firstRun.getByTestId('task-graph');
    await board.getByTestId('graph-stage').first().waitFor();
    await screenshot(page, 'research-first-run.png');
    expect(await board.getByTestId('graph-stage').count()).toBe(3);
    await expect(board.getByTestId('stage-verdict').first().textContent()).resolves.toBe('FAIL');
    expect(await board.locator('[data-testid="graph-task"][data-status="todo"]').first().textContent()).toContain('1.2');
    await expect(board.getByTestId('verdict').first().textContent()).resolves.toMatch(/the calculator is not enabled for this run.*follow-up tasks 1\.2/);

    expect(await board.getByTestId('follow-up').count()).toBe(1);

    // The document's editor: a broken edit is refused with its line, a good one saved.
    await board.getByRole('button', { name: 'Edit RESEARCH_STATE.md' }).click();
    const editor = board.getByRole('textbox', { name: 'RESEARCH_STATE.md' });
    const original = await editor.inputValue();
    expect(original).toContain('```yaml TASK_GRAPH_V2');
    await editor.fill(original.replace('agent: verifier', 'agent: fortune_teller'));
    await board.getByRole('button', { name: 'Save' }).click();
    await expect(board.getByTestId('doc-error').textContent()).resolves.toMatch(/RESEARCH_STATE\.md line \d+: stages\.1\.tasks\.0\.agent/);
    await editor.fill(original.replace('Recompute the calculation another way, as one expression', 'Recompute the calculation another way, briefly'));
    await board.getByRole('button', { name: 'Save' }).click();
    await editor.waitFor({ state: 'detached' });

    await board.getByRole('button', { name: 'Run', exact: true }).click();
    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').waitFor();
    const stages = secondRun.getByTestId('graph-stage');
    await stages.first().waitFor();
    expect(await stages.evaluateAll((items) => items.map((item) => item.getAttribute('data-status')))).toEqual(['passed', 'passed', 'passed']);
    await page.getByTestId('assistant-turn').filter({ hasText: 'Report' }).waitFor();
    await expect(secondRun.getByTestId('task-graph').textContent()).resolves.toContain('Recompute the calculation another way, briefly');
    await secondRun.getByTestId('open-report').waitFor();
    await screenshot(page, 'research-run.png');
  });
});
