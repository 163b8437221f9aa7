// Grounded endings in Chromium: a demo run that could not answer says so in the warning colour
// ("Could not answer: …") with Continue, never green; one that could is green; no machinery
// (markers, tool names, raw lists) on screen; the approval card and the cost chart reached from
// the demo. Screenshots go to tests/artifacts/endings-*.png.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;
let server: TestServer;

const STRATEGIES = [
  { strategy: 'roa', label: 'Reason, act, observe' },
  { strategy: 'plan_execute', label: 'Plan and execute' },
  { strategy: 'autonomous', label: 'Autonomous (todo list)' },
  { strategy: 'solver', label: 'Staged solver' },
  { strategy: 'research', label: 'Research (task graph)' },
];

async function openChat(label: string) {
  // One chat per strategy: the one before closes first.
  await (page as Page | undefined)?.context().close();
  page = await web.page(server.url, { viewport: { width: 1100, height: 900 } });
  await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label });
  // The solver's confirmations are its own feature: here it runs through.
  const auto = page.getByRole('checkbox', { name: /auto.?advance/i });
  if (label === 'Staged solver' && (await auto.count()) > 0) await auto.check();
}

/** Machinery a person should never read: the unresolved marker, raw tool names, raw status lists, prompt headings. */
async function machinery(): Promise<string[]> {
  const text = await page.locator('main, body').first().innerText();
  return ['[UNRESOLVED]', 'WORKFLOW GUIDANCE', '- [pending]', 'todo_operations'].filter((word) => text.includes(word));
}

describe('grounded endings in the web app', { timeout: 6 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it.each(STRATEGIES)(
    '$strategy: "Compute 10/0" ends "Could not answer" in the warning colour with Continue; "15% of 240, then add 7" is green',
    async ({ strategy, label }) => {
      server = await web.demo();
      await openChat(label);
      await ask(page, 'Compute 10/0 please');
      const end = page.getByTestId('run-end');
      await end.waitFor({ timeout: 60_000 });
      expect(await end.getAttribute('class')).toContain('run-end-unresolved');
      expect(await end.textContent()).toMatch(/^Could not answer: .*calculator could not evaluate/);
      const color = await end.evaluate((element) => getComputedStyle(element).color);
      const warn = await page.evaluate(() => {
        const probe = document.createElement('span');
        probe.style.color = 'var(--warn)';
        document.body.append(probe);
        const value = getComputedStyle(probe).color;
        probe.remove();
        return value;
      });
      expect(color).toBe(warn);
      await page.getByTestId('run-continue').getByRole('button', { name: 'Continue' }).waitFor();
      expect(await page.getByTestId('assistant-turn').last().innerText()).toMatch(/^Could not answer: /);
      expect(await machinery()).toEqual([]);
      // The solver's orchestrator decided FINAL, but on nothing a tool computed: not shown as a success either.
      if (strategy === 'solver') expect(await page.getByTestId('decision').locator('.badge').textContent()).toBe('FINAL · could not answer');
      await screenshot(page, `endings-${strategy}-unresolved.png`);

      await openChat(label);
      await ask(page, 'What is 15% of 240, then add 7?');
      await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
      expect(await page.getByTestId('run-end').getAttribute('class')).toMatch(/run-end-answered/);
      expect(await page.getByTestId('assistant-turn').last().innerText()).toMatch(/\b43\b/);
      expect(await machinery()).toEqual([]);
    },
  );

  it('the demo reaches the approval card ("Write \'hello\' to out.txt") and its run shows the cost chart', async () => {
    server = await web.demo();
    await openChat('Reason, act, observe');
    await ask(page, "Write 'hello' to out.txt");
    const card = page.getByTestId('approval');
    await card.waitFor({ timeout: 30_000 });
    await screenshot(page, 'endings-approval.png');
    await card.getByRole('button', { name: 'Approve' }).click();
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('assistant-turn').last().innerText()).toMatch(/I wrote out\.txt/);
    await page.getByTestId('cost-toggle').locator('summary').click();
    await page.getByTestId('cost-row').first().waitFor();
    expect(await page.getByTestId('cost-chart').innerText()).toMatch(/roa\.reason\s+[\d,]+ tokens/);
    await screenshot(page, 'endings-cost.png');
  });
});
