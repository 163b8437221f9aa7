import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

const observe = (observation: string, complete: boolean) => `${observation}\n\n\`\`\`json\n${JSON.stringify({ observation, step_complete: complete })}\n\`\`\``;
const planOf = (...goals: string[]) =>
  JSON.stringify({ steps: goals.map((goal) => ({ goal, primary_tools: ['calculator'], success_criteria: 'a number', context: '' })) });

describe('a plan run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('shows the plan as a checklist that fills in, a re-plan as a revision saying why, each step’s iterations under it, and the summary', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    llm.respond((request) => {
      switch (request.purpose) {
        case 'plan_execute.plan':
          return { text: planOf('Compute 6*7 the hard way', 'Write it down') };
        case 'plan_execute.replan':
          return { text: planOf('Compute 6*7 plainly') };
        case 'plan_execute.reason':
          return { text: reasonText('Use the calculator.') };
        case 'plan_execute.act':
          return { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }] };
        case 'plan_execute.observe':
          // Step 2 takes a moment, so the checklist is seen with it running.
          return request.node === '1' ? { text: observe('That did not settle it.', false) } : { text: observe('6*7 = 42.', true), delayMs: 1_500 };
        default:
          return { text: '6*7 is **42**.' };
      }
    });
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
