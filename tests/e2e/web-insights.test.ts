// Seeing a run: the research task graph drawn (a node per task, an edge per dependency, statuses
// live), a timeline of model calls, tool calls and waiting, tokens and cost by purpose, and two
// branches compared after a rewind.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';
import { plannedTask } from '../fixtures/research-tasks.ts';

const web = useWebApp();
let page: Page;

async function open(server: TestServer, viewport = { width: 1280, height: 900 }) {
  page = await web.page(server.url, { viewport });
}

describe('seeing a run', { timeout: 3 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('draws the research graph: a node per task, an edge per dependency, statuses live; a node opens its task', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    const task = plannedTask;
    const plan = {
      stages: [
        { id: '1', name: 'Gather', verifier_criteria: [], tasks: [task('1.1'), task('1.2', ['1.1']), task('1.3', ['1.1'])] },
        { id: '2', name: 'Write', verifier_criteria: [], tasks: [task('2.1')] },
      ],
    };
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    llm.respond((request): ScriptedReply => {
      switch (request.purpose) {
        case 'research.plan':
          return { text: JSON.stringify(plan) };
        case 'research.task':
          // 1.1 is held until the test has seen it running in the drawing.
          return { text: `finding of ${request.node}`, ...(request.node === '1.1' ? { after: held } : {}) };
        case 'research.task_result':
          return { text: JSON.stringify({ summary: 'found', result: 'found', evidence: [], artifacts: [] }) };
        case 'research.report':
          return { text: 'Report.' };
        default:
          return { text: JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] }) };
      }
    });
    const { server } = await web.scripted({}, llm);
    await open(server);
    await page.getByRole('combobox', { name: 'Strategy' }).selectOption({ label: 'Research (task graph)' });
    await ask(page, 'Study it');
    const drawing = page.getByTestId('graph-view');
    await drawing.locator('[data-testid="graph-node"][data-task="1.1"][data-status="running"]').waitFor({ state: 'attached' });
    expect(await drawing.getByTestId('graph-node').count()).toBe(4);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="graph-view"] .react-flow__edge').length === 2);
    expect(await drawing.locator('.react-flow__edge').evaluateAll((edges) => edges.map((edge) => edge.getAttribute('data-id')).sort())).toEqual([
      '1.1->1.2',
      '1.1->1.3',
    ]);
    await screenshot(page, 'graph-running.png');
    release();
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    await drawing.locator('[data-testid="graph-node"][data-task="2.1"][data-status="done"]').waitFor({ state: 'attached' });
    expect(await drawing.locator('[data-testid="graph-node"][data-status="done"]').count()).toBe(4);
    // A node opens its task's work.
    await drawing.locator('[data-testid="graph-node"][data-task="1.3"]').click();
    await page.waitForFunction(() => (document.querySelector('[data-testid="branch"][data-node-id="1.3"]') as HTMLDetailsElement | null)?.open === true);
    // The drawing is not for editing: the keys that delete in React Flow remove no task.
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Delete');
    expect(await drawing.getByTestId('graph-node').count()).toBe(4);
    await screenshot(page, 'graph-done.png');
  });

  it('a timeline with a bar per model call and tool call, durations from the log; tokens and cost by purpose', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    const usage = { prompt_tokens: 1_000, completion_tokens: 100 };
    llm.enqueue(
      { text: reasonText('Compute.'), usage, delayMs: 60 },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }], usage, delayMs: 40 },
      { text: observeText('42.', { final_answer: 'It is 42.' }), usage, delayMs: 30 },
    );
    const { server } = await web.scripted({ LLM_MODEL: 'gpt-4o-mini' }, llm);
    await open(server);
    await ask(page, 'What is 6*7?');
    await page.getByTestId('run-end').waitFor();
    await page.getByTestId('timeline-toggle').locator('summary').click();
    const bars = page.getByTestId('timeline-bar');
    // The chart loads when first opened: wait for it before reading its bars.
    await bars.first().waitFor();
    const kinds = await bars.evaluateAll((items) => items.map((item) => item.getAttribute('data-kind')));
    expect(kinds.filter((kind) => kind === 'model')).toHaveLength(3);
    expect(kinds.filter((kind) => kind === 'tool')).toHaveLength(1);
    // The model calls took at least as long as the model server held them.
    const durations = await page
      .locator('[data-testid="timeline-bar"][data-kind="model"]')
      .evaluateAll((items) => items.map((item) => Number(item.getAttribute('data-duration'))));
    expect(durations[0]).toBeGreaterThanOrEqual(50);
    expect(await bars.first().getAttribute('aria-label')).toMatch(/roa\.reason · \d+ ms · 1100 tokens/);
    // Keyboard: the bars are buttons that take focus.
    await bars.first().focus();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('timeline-bar');
    // A click (or a tap) opens the bar's details, not only a hover.
    await bars.first().click();
    expect(await page.getByTestId('timeline-detail').textContent()).toMatch(/roa\.reason · \d+ ms · 1100 tokens/);

    await page.getByTestId('cost-toggle').locator('summary').click();
    const rows = page.getByTestId('cost-row');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(3);
    expect(await page.getByTestId('cost-chart').innerText()).toMatch(/roa\.reason\s+1,100 tokens · 1 call · \$0\.00021/);
    await screenshot(page, 'timeline-and-cost.png');
    // On a phone the timeline scrolls sideways; its rows and bars stay readable.
    await page.setViewportSize({ width: 390, height: 800 });
    // The chat list slides away on a phone: the picture is taken once it has.
    await page.waitForFunction(() => (document.querySelector('nav.sidebar')?.getBoundingClientRect().right ?? 0) <= 0);
    await page.getByTestId('timeline').scrollIntoViewIfNeeded();
    await screenshot(page, 'timeline-phone.png');
    await page.setViewportSize({ width: 1280, height: 900 });

    // After a reload the timeline is rebuilt from the log.
    await page.reload();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.getByTestId('timeline-toggle').locator('summary').click();
    await page.getByTestId('timeline-bar').first().waitFor();
    expect(await page.getByTestId('timeline-bar').count()).toBe(4);
  });

  it('after a rewind, Compare shows the branch before and after side by side', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    llm.enqueue(
      { text: reasonText('First step.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '2+2' } }] },
      { text: observeText('4.', { should_continue: true }) },
      { text: reasonText('Second step.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '4*10' } }] },
      { text: observeText('40.', { final_answer: 'It is **40**.' }) },
      // The rewound branch goes on from the end of step 1 another way.
      { text: reasonText('Second step, again.') },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '4+10' } }] },
      { text: observeText('14.', { final_answer: 'It is **14**.' }) },
    );
    const { server } = await web.scripted({}, llm);
    await open(server);
    await ask(page, 'Work it out');
    const firstRun = page.getByTestId('run').first();
    await firstRun.getByTestId('run-end').waitFor();
    const step1 = firstRun.getByTestId('step-card').first();
    await step1.locator('summary').first().click();
    await step1.getByRole('button', { name: 'Rewind to here' }).click();
    await step1.getByRole('button', { name: 'Rewind', exact: true }).click();
    const secondRun = page.getByTestId('run').nth(1);
    await secondRun.getByTestId('run-end').waitFor();
    await secondRun.getByTestId('compare-toggle').locator('summary').click();
    const compare = secondRun.getByTestId('compare');
    const text = await compare.innerText();
    expect(text).toMatch(/Answer\s+It is 40\.\s+It is 14\./);
    // The answers are rendered as the chat renders them: Markdown, not its marks.
    expect(await compare.locator('strong').allTextContents()).toEqual(['40', '14']);
    expect(text).toMatch(/Tool calls\s+2 calls \(calculator\)\s+1 call \(calculator\)/);
    await screenshot(page, 'compare.png');
  });
});
