import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { solidPng } from '../fixtures/image-maker.ts';
import { EVERYTHING_STDIO, writeMcpConfig } from '../fixtures/mcp-servers.ts';
import { answerAfter, observeText, reasonText, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;
let llm: ScriptedLlmServer;

/** Each test starts its server (the file's first one opens the shared embedded database) and maybe server-everything. */
const BROWSER_FILE_TEST_TIMEOUT_MS = 2 * BROWSER_TEST_TIMEOUT_MS;

async function open(env: Record<string, string> = {}) {
  const started = await web.scripted(env);
  llm = started.llm;
  page = await web.page(started.server.url, { acceptDownloads: true });
}

describe('session files in the web app', { timeout: BROWSER_FILE_TEST_TIMEOUT_MS }, () => {
  it('attaches a file with the picker and watches the agent read it', async () => {
    await open();
    await page
      .getByLabel('Attach files')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('The meeting is on Thursday at 10.') });
    await page.getByRole('button', { name: 'Download notes.txt' }).waitFor();

    llm.enqueue(
      ...answerAfter(
        'Read the attached notes.',
        [{ id: 'read', name: 'read_file', arguments: { name: 'notes.txt' } }],
        'The notes say Thursday at 10.',
        'The meeting is on **Thursday at 10**.',
      ),
    );
    await ask(page, 'When is the meeting? See my notes.');
    await page.getByText('Answered in 1 step').waitFor();
    const card = page.getByTestId('tool-card');
    await expect(card.textContent()).resolves.toMatch(/Read a file.*done.*notes\.txt.*The meeting is on Thursday at 10\./s);
    // The reason prompt listed the file for the model.
    expect(llm.requests.find((request) => request.phase === 'reason')!.body.messages[0]!.content).toContain('notes.txt');
    await screenshot(page, 'file-read.png');
  });

  it('attaches a file dropped anywhere on the page', async () => {
    await open();
    const dataTransfer = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['dropped contents'], 'dropped.txt', { type: 'text/plain' }));
      return transfer;
    });
    await page.dispatchEvent('.app', 'dragover', { dataTransfer });
    await page.getByText('Drop files to attach them to this chat').waitFor();
    await page.dispatchEvent('.app', 'drop', { dataTransfer });
    await page.getByRole('button', { name: 'Download dropped.txt' }).waitFor();
    expect(await page.getByText('Drop files to attach them to this chat').count()).toBe(0);
  });

  it('attaches a pasted picture to the next message, which shows it to a vision model', async () => {
    await open({ LLM_VISION: 'true' });
    // A screenshot pasted into the message box: browsers name every one "image.png".
    await page.getByLabel('Message', { exact: true }).evaluate((box, png) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([Uint8Array.from(atob(png), (character) => character.charCodeAt(0))], 'image.png', { type: 'image/png' }));
      box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, solidPng(8, 8).toString('base64'));
    const chip = page.getByRole('list', { name: 'Attached, not yet sent' }).getByRole('listitem');
    await chip.waitFor();
    await expect(chip.textContent()).resolves.toMatch(/^pasted-\d{8}-\d{6}\.png.*image/);

    llm.enqueue({ text: reasonText('A red square.', { finish: true }) }, { text: observeText('Seen.', { final_answer: 'It is a small red square.' }) });
    await ask(page, 'What is in this picture?');
    await page.getByText('It is a small red square.').waitFor();
    expect(await page.getByRole('list', { name: 'Attached, not yet sent' }).count()).toBe(0);
    await expect(page.getByTestId('user-turn').textContent()).resolves.toMatch(/What is in this picture\?\s*pasted-.*\.png/);
    const turn = llm.requests[0]!.body.messages.find((message) => message.role === 'user' && Array.isArray(message.content));
    expect(((turn?.content ?? []) as unknown as { type: string }[]).map((part) => part.type)).toEqual(['text', 'image_url']);
  });

  it('shows a file the agent wrote, and downloads it', async () => {
    await open();
    llm.enqueue(
      ...answerAfter(
        'Write the report.',
        [{ id: 'write', name: 'write_file', arguments: { name: 'report.md', content: '# Report\nAll good.' } }],
        'Written.',
        'I wrote report.md.',
      ),
    );
    await ask(page, 'Write a report file');
    // write_file asks first: the person approves it in the tool's card.
    await page.getByTestId('approval').getByRole('button', { name: 'Approve' }).click();
    const chip = page.getByRole('button', { name: 'Download report.md' });
    await chip.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), chip.click()]);
    expect(download.suggestedFilename()).toBe('report.md');
    expect(readFileSync(await download.path(), 'utf8')).toBe('# Report\nAll good.');
  });

  it('says why an upload was refused', async () => {
    await open({ FILE_MAX_BYTES: '10' });
    await page.getByLabel('Attach files').setInputFiles({ name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.alloc(100, 'a') });
    await page
      .getByRole('alert')
      .getByText(/Could not attach big\.txt: Files are limited to/)
      .waitFor();
  });
});

describe('MCP tools in the web app', { timeout: BROWSER_FILE_TEST_TIMEOUT_MS }, () => {
  it("lists a configured server's tools in the picker; ticking one lets the agent use it", async () => {
    await open({ STEPWISE_CONFIG: writeMcpConfig({ everything: EVERYTHING_STDIO }) });

    const group = page.getByRole('group', { name: 'everything' });
    const echo = group.getByRole('checkbox', { name: 'echo', exact: true });
    expect(await echo.isChecked()).toBe(false);
    await echo.check();

    llm.enqueue(
      ...answerAfter(
        'Echo it.',
        [{ id: 'echo', name: 'everything__echo', arguments: { message: 'hello from MCP' } }],
        'It echoed.',
        'The server said hello back.',
      ),
    );
    await ask(page, 'Echo hello');
    await page.getByText('Answered in 1 step').waitFor();
    const act = llm.requests.find((request) => request.phase === 'act')!;
    expect(act.toolNames).toContain('everything__echo');
    await expect(page.getByTestId('tool-card').textContent()).resolves.toMatch(/echo \(everything\).*done.*Echo: hello from MCP/s);
  });

  it('shows an image a tool returned as a preview in its tool card', async () => {
    await open({ STEPWISE_CONFIG: writeMcpConfig({ everything: EVERYTHING_STDIO }) });
    await page.getByRole('group', { name: 'everything' }).getByRole('checkbox', { name: 'get-tiny-image', exact: true }).check();
    llm.enqueue(...answerAfter('Get the image.', [{ id: 'img', name: 'everything__get-tiny-image', arguments: {} }], 'Got it.', 'Here is the tiny image.'));
    await ask(page, 'Show me the tiny image');
    const image = page.getByTestId('tool-card').getByRole('img');
    await image.waitFor();
    await page.waitForFunction(() => ((document.querySelector('.saved-file img') as HTMLImageElement | null)?.naturalWidth ?? 0) > 0);
    expect(await image.getAttribute('alt')).toMatch(/^everything-image-[0-9a-f]+\.png$/);
    await screenshot(page, 'mcp-image.png');
  });

  it("shows a long MCP call's progress, and Stop cancels it", async () => {
    await open({ STEPWISE_CONFIG: writeMcpConfig({ everything: EVERYTHING_STDIO }) });
    await page.getByRole('group', { name: 'everything' }).getByRole('checkbox', { name: 'trigger-long-running-operation', exact: true }).check();
    llm.enqueue(
      { text: reasonText('Start the long operation.') },
      { toolCalls: [{ id: 'long', name: 'everything__trigger-long-running-operation', arguments: { duration: 30, steps: 60 } }] },
    );
    await ask(page, 'Run the long operation');
    const progress = page.getByRole('progressbar', { name: 'Progress of everything__trigger-long-running-operation' });
    await progress.waitFor();
    await page.getByTestId('tool-card').getByText(/of 60/).waitFor();
    await screenshot(page, 'mcp-progress.png');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByTestId('run-end').getByText('Stopped').waitFor();
    await expect(page.getByTestId('tool-card').textContent()).resolves.toMatch(/trigger long running operation \(everything\).*stopped/s);
    expect(await progress.count()).toBe(0);
  });
});
