import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { replanningModel } from '../fixtures/plan-execute-model.ts';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

describe('a plan run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the plan as a checklist that fills in, a re-plan as a revision saying why, each step’s iterations under it, and the summary', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    // Step 2 takes a moment, so the checklist is seen with it running.
    llm.respond(replanningModel(1_500));
    const server = await web.demo({ LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'test-key', LLM_MODEL: 'scripted-model' });
    page = await web.page(server.url);

    await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: 'Plan and execute' });
    await ask(page, 'What is 6*7?');
    const checklist = page.getByTestId('plan-checklist');
    const steps = checklist.getByTestId('plan-step');
    // After the re-plan (step 1 failed after its 3 attempts): the new step 2 running.
    await page.getByTestId('plan-revision').waitFor();
    await page.locator('[data-testid="plan-step"][data-status="running"]').waitFor();
    await expect(checklist.textContent()).resolves.toContain('revision 2');
    expect(await steps.nth(0).getAttribute('data-status')).toBe('failed');
    await expect(steps.nth(1).textContent()).resolves.toContain('Compute 6*7 plainly');
    await expect(page.getByTestId('plan-revision').textContent()).resolves.toMatch(
      /Revision 2: re-planned because a step failed after its attempts · 1 step added, 1 dropped/,
    );

    await page.getByText('6*7 is 42.', { exact: false }).last().waitFor();
    await page.getByTestId('plan-summary').waitFor();
    expect(await steps.nth(1).getAttribute('data-status')).toBe('done');
    await expect(page.getByTestId('plan-summary').textContent()).resolves.toMatch(/1 of 2 steps done, 1 failed · 4 tool calls · 1 re-plan/);
    const branches = page.getByTestId('branch');
    expect(await branches.count()).toBe(2);
    await expect(branches.nth(0).textContent()).resolves.toMatch(/Iteration 1.*Iteration 2.*Iteration 3/s);
    await screenshot(page, 'plan-execute-run.png');
  });
});
