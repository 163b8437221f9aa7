import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { freePort, writeMcpConfig } from '../fixtures/mcp-servers.ts';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';
import { BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;

/** The session message as any client gets it: says which optional fields this server sends. */
async function sessionOf(target: TestServer) {
  return web.open(await TestClient.connect(target.wsUrl)).session;
}

async function openPage(url: string, viewport: { width: number; height: number }) {
  page = await web.page(url, { viewport });
}

const settingsDialog = () => page.getByRole('dialog', { name: 'Settings' });

/** A test that starts a server (the file's first opens the shared database) and drives the browser. */
const SETTINGS_TEST_TIMEOUT_MS = 2 * BROWSER_TEST_TIMEOUT_MS;

describe('the settings panel', { timeout: SETTINGS_TEST_TIMEOUT_MS }, () => {
  it('shows the model, the MCP servers, the limits in force and how to change them; Escape closes it', async () => {
    // A server that cannot start: it is listed all the same, with why it is unavailable.
    const configFile = writeMcpConfig({ broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] } });
    const { server } = await web.scripted({ AGENT_MAX_STEPS: '3', STEPWISE_CONFIG: configFile });
    const session = await sessionOf(server);
    await openPage(server.url, { width: 1000, height: 900 });
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });

    // With only roa on offer, the composer shows no strategy picker.
    const offered = (session.strategy_catalog ?? []).length;
    expect(await page.getByRole('combobox', { name: 'Strategy' }).count()).toBe(offered > 1 ? 1 : 0);

    await page.getByRole('button', { name: 'Settings' }).click();
    const dialog = settingsDialog();
    await dialog.waitFor();
    const model = dialog.getByTestId('settings-model');
    await expect(model.textContent()).resolves.toContain('scripted-model');
    expect(session.model_endpoint).toEqual(expect.any(String));
    await expect(model.textContent()).resolves.toContain(session.model_endpoint);
    // The scripted endpoint answers: the startup check finds it working.
    await dialog.getByTestId('settings-health').filter({ hasText: 'Model working' }).waitFor();
    await dialog
      .getByTestId('settings-health')
      .getByText(/Checked (just now|\d+ min ago)/)
      .waitFor();

    const servers = dialog.getByRole('region', { name: 'MCP servers' });
    await servers.getByText('broken').waitFor();
    await expect(servers.getByRole('listitem').filter({ hasText: 'broken' }).textContent()).resolves.toMatch(
      /broken.*stdio.*(connecting|unavailable).*0 tools/s,
    );
    await expect(servers.getByTestId('config-file').textContent()).resolves.toBe(session.config_file);

    const limits = dialog.getByRole('region', { name: 'Limits in force' });
    await expect(limits.getByRole('row').filter({ hasText: 'AGENT_MAX_STEPS' }).first().textContent()).resolves.toMatch(/AGENT_MAX_STEPS\s*3/);
    expect(await limits.getByRole('row').count()).toBe(session.settings!.length + 1);

    // Notifications: granting the clipboard alone refused every other permission to this page, as a
    // person blocking notifications would; Settings says where to allow them, and offers no button.
    const notifications = dialog.getByRole('region', { name: 'Notifications' });
    await expect(notifications.getByTestId('settings-notifications').textContent()).resolves.toMatch(/^Blocked in this browser: allow notifications/);
    expect(await notifications.getByRole('button', { name: 'Turn on notifications' }).count()).toBe(0);
    // The person's own webhook: saved, its signing secret shown to copy.
    const ownWebhook = notifications.getByTestId('own-webhook');
    await ownWebhook.getByRole('textbox', { name: /Your webhook/ }).fill('https://hooks.example.com/stepwise');
    await ownWebhook.getByRole('button', { name: 'Save' }).click();
    await ownWebhook.getByText(/^whsec_/).waitFor();
    await notifications.scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-notifications.png');

    const howTo = dialog.getByRole('region', { name: 'How to change' });
    await expect(howTo.textContent()).resolves.toContain('OPENAI_BASE_URL=http://localhost:11434/v1');
    await expect(howTo.textContent()).resolves.toContain('npx -y pnpm@10 start');

    await servers.getByRole('button', { name: 'Copy the MCP config snippet' }).click();
    await servers
      .getByRole('status')
      .filter({ hasText: /Copied|Selected/ })
      .waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText().catch(() => ''));
    if (copied) expect(JSON.parse(copied)).toEqual({ mcpServers: { NAME: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] } } });
    await screenshot(page, 'settings.png');

    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // The header stays quiet about a model that works.
    expect(await page.getByTestId('model-health-warning').count()).toBe(0);
  });

  it('warns in the header when the model endpoint cannot be reached, with what to check, and fits a phone', async () => {
    // Nothing listens on this port.
    const deadEndpoint = `http://127.0.0.1:${await freePort()}/v1`;
    const server = web.open(await startStepwiseWithModel(deadEndpoint, { LLM_MODEL: 'absent-model' }));
    await sessionOf(server);
    await openPage(server.url, { width: 375, height: 740 });

    // The startup check finds it (the session says so, or a live model_health event follows).
    const warning = page.getByTestId('model-health-warning');
    await warning.waitFor();
    await expect(warning.textContent()).resolves.toMatch(/Model unreachable.*OPENAI_BASE_URL/s);
    expect(await page.getByRole('alert').filter({ hasText: 'Model unreachable' }).count()).toBe(1);
    await screenshot(page, 'model-warning-phone.png');
    // The Settings button keeps its place in the header on a phone.
    const button = (await page.getByRole('button', { name: 'Settings' }).boundingBox())!;
    expect(button.x + button.width).toBeLessThanOrEqual(375);

    await page.getByRole('button', { name: 'Settings' }).click();
    const dialog = settingsDialog();
    await dialog.waitFor();
    await expect(dialog.getByTestId('settings-model').textContent()).resolves.toContain('absent-model');
    await expect(dialog.getByTestId('settings-health').textContent()).resolves.toMatch(/Model unreachable.*Could not reach.*Check OPENAI_BASE_URL.*Checked/s);
    const box = (await dialog.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    // Nothing in it is wider than the phone: no sideways scrolling.
    expect(await dialog.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    await screenshot(page, 'settings-phone.png');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });
  });
});

describe('the settings editor', { timeout: SETTINGS_TEST_TIMEOUT_MS }, () => {
  it('an admin changes the model, the key and an approval rule with no restart; locked settings show their source, failed checks their field, the change its record; the key never comes back', async () => {
    const llm = web.open(await ScriptedLlmServer.start());
    llm.respond(() => ({ text: 'Hello there.' }));
    const secret = 'sk-typed-in-the-browser-0042';
    // Its own database: the settings it stores stay out of the other tests' servers.
    const server = web.open(
      await startStepwise({
        LLM_PROVIDER: 'openai',
        OPENAI_BASE_URL: llm.url,
        AGENT_MAX_STEPS: '3',
        DATA_DIR: mkdtempSync(join(tmpdir(), 'stepwise-settings-')),
      }),
    );
    await openPage(server.url, { width: 1000, height: 900 });
    await page.getByRole('button', { name: 'Settings' }).click();
    const editor = settingsDialog().getByRole('form', { name: 'Change settings' });
    await editor.getByRole('button', { name: 'Save changes' }).waitFor();

    // What the environment sets is locked, with its source.
    const field = (label: string) => editor.locator('.settings-field').filter({ has: page.getByLabel(label, { exact: true }) });
    expect(await editor.getByLabel('Endpoint URL').isDisabled()).toBe(true);
    await expect(field('Endpoint URL').getByTestId('setting-source').textContent()).resolves.toBe('Locked (environment: OPENAI_BASE_URL)');
    await expect(field('Iterations a run may take by default AGENT_MAX_STEPS').getByTestId('setting-source').textContent()).resolves.toBe(
      'Locked (environment: AGENT_MAX_STEPS)',
    );

    // A check that fails names its field; nothing is saved.
    await editor.getByLabel('Prices (USD per million tokens)').fill('{"my-model": {"input": -1, "output": 1}}');
    await editor.getByRole('button', { name: 'Save changes' }).click();
    await expect(editor.getByRole('alert').textContent()).resolves.toMatch(/Not saved.*prices.*must not be negative/s);
    await editor.getByLabel('Prices (USD per million tokens)').fill('');

    await editor.getByLabel('Model', { exact: true }).fill('edited-model');
    await editor.getByLabel('API key').fill(secret);
    await editor.getByRole('button', { name: 'Add a rule' }).click();
    await editor.getByLabel('Tool or glob of rule 1').fill('calculator');
    await editor.getByLabel('Policy of rule 1').selectOption('ask');
    await editor.getByRole('button', { name: 'Save changes' }).click();
    await editor.getByRole('status').filter({ hasText: 'Saved. Version 1' }).waitFor();
    expect(await editor.getByRole('alert').count()).toBe(0);
    const record = editor.getByTestId('settings-history');
    await expect(record.textContent()).resolves.toMatch(
      /model_endpoint\.api_key: not set → set.*model: not set in the app → edited-model.*approval\.calculator/s,
    );
    await expect(field('Model').getByTestId('setting-source').textContent()).resolves.toBe('set in the app');
    // Every client hears of it: the model the dialog names is the new one.
    await settingsDialog().getByTestId('settings-model').filter({ hasText: 'edited-model' }).waitFor();
    // Write-only: the key's field is empty again, and the page holds the key nowhere.
    expect(await editor.getByLabel('API key').inputValue()).toBe('');
    expect(await editor.getByLabel('API key').getAttribute('placeholder')).toMatch(/^Set/);
    expect(await page.content()).not.toContain(secret);
    await settingsDialog().getByRole('heading', { name: 'Change settings' }).scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-editor.png');
    await page.setViewportSize({ width: 375, height: 740 });
    expect(await settingsDialog().evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    await editor.getByLabel('Model', { exact: true }).scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-editor-phone.png');
    await editor.getByTestId('settings-history').scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-editor-history-phone.png');
    await page.keyboard.press('Escape');
    await page.setViewportSize({ width: 1000, height: 900 });

    // The next answer uses the new model and key: no restart.
    await page.getByRole('switch', { name: 'Agent mode' }).uncheck();
    await page.getByRole('textbox', { name: 'Message' }).fill('Hello?');
    await page.getByRole('button', { name: 'Send' }).click();
    const request = await llm.waitFor((each) => each.phase === 'chat', 30_000);
    expect(request.body.model).toBe('edited-model');
    expect(request.headers.authorization).toBe(`Bearer ${secret}`);
  });
});

describe('the header on a phone', { timeout: SETTINGS_TEST_TIMEOUT_MS }, () => {
  it('stays one line with the demo model, its health and the Settings button', async () => {
    const server = await web.demo();
    const session = await sessionOf(server);
    await openPage(server.url, { width: 375, height: 740 });
    const header = (await page.locator('.app-header').boundingBox())!;
    expect(header.height).toBeLessThanOrEqual(48);
    const button = (await page.getByRole('button', { name: 'Settings' }).boundingBox())!;
    expect(button.x + button.width).toBeLessThanOrEqual(375);
    if (session.model_health?.status === 'ok') expect(await page.getByRole('img', { name: /Model working/ }).count()).toBe(1);

    await page.getByRole('button', { name: 'Settings' }).click();
    const model = settingsDialog().getByTestId('settings-model');
    await expect(model.textContent()).resolves.toMatch(/Demo.*Demo model, no endpoint/s);
  });
});

describe('a plain answer that failed', { timeout: SETTINGS_TEST_TIMEOUT_MS }, () => {
  it('shows in the conversation in the answer’s place, and again after a reload', async () => {
    const deadEndpoint = `http://127.0.0.1:${await freePort()}/v1`;
    const server = web.open(await startStepwiseWithModel(deadEndpoint, { LLM_MODEL: 'absent-model' }));
    await openPage(server.url, { width: 1000, height: 900 });
    await page.getByRole('switch', { name: 'Agent mode' }).uncheck();
    await page.getByRole('textbox', { name: 'Message' }).fill('Hello?');
    await page.getByRole('button', { name: 'Send' }).click();

    const failure = page.getByTestId('answer-failure');
    await failure.waitFor();
    expect(await page.getByTestId('assistant-pending').count()).toBe(0);
    expect(await page.getByTestId('assistant-streaming').count()).toBe(0);
    const message = (await failure.textContent())!;
    expect(message.length).toBeGreaterThan(0);
    // In the danger colour, like an answer.
    const colours = await failure.locator('.bubble').evaluate((bubble) => {
      const probeElement = document.createElement('span');
      probeElement.style.color = 'var(--danger)';
      document.body.append(probeElement);
      const danger = getComputedStyle(probeElement).color;
      probeElement.remove();
      return { bubble: getComputedStyle(bubble).color, danger };
    });
    expect(colours.bubble).toBe(colours.danger);
    // response_complete follows: the composer is free again.
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });

    await page.reload();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.getByTestId('answer-failure').filter({ hasText: message }).waitFor();
    await page.getByTestId('user-turn').filter({ hasText: 'Hello?' }).waitFor();
    expect(await page.getByTestId('answer-failure').count()).toBe(1);
    expect(await page.getByTestId('assistant-pending').count()).toBe(0);
  });
});
