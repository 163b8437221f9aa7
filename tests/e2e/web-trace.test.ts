import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useBrowser } from './browser.ts';

let browser: Browser;
let context: BrowserContext | undefined;
let page: Page;
let server: TestServer | undefined;
let collector: Server | undefined;

useBrowser(
  (launched) => (browser = launched),
  () => [context, server, collector],
);

/** A collector that takes every export and keeps nothing. */
async function acceptingCollector(): Promise<string> {
  collector = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => collector!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
}

describe('a traced run in the web app', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('links each run to its trace when the server has TRACE_URL_TEMPLATE', async () => {
    server = await startStepwise({ OTEL_EXPORTER_OTLP_ENDPOINT: await acceptingCollector(), TRACE_URL_TEMPLATE: 'http://jaeger.example/trace/{trace_id}' });
    context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
    page = await context.newPage();
    await page.goto(server.url);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await ask(page, 'What is (17+25)*3?');
    const link = page.getByTestId('run-trace');
    await link.waitFor();
    expect(await link.getAttribute('href')).toMatch(/^http:\/\/jaeger\.example\/trace\/[0-9a-f]{32}$/);
    expect(await link.getAttribute('target')).toBe('_blank');
    await screenshot(page, 'run-trace-link.png');
  });
});
