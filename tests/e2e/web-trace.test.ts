import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, useWebApp } from './browser.ts';

const web = useWebApp();
let page: Page;
let collector: Server | undefined;

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
    const server = await web.demo({ OTEL_EXPORTER_OTLP_ENDPOINT: await acceptingCollector(), TRACE_URL_TEMPLATE: 'http://jaeger.example/trace/{trace_id}' });
    page = await web.page(server.url, { viewport: { width: 1000, height: 800 } });
    await page.getByRole('switch', { name: 'Agent mode' }).check();
    await ask(page, 'What is (17+25)*3?');
    const link = page.getByTestId('run-trace');
    await link.waitFor();
    expect(await link.getAttribute('href')).toMatch(/^http:\/\/jaeger\.example\/trace\/[0-9a-f]{32}$/);
    expect(await link.getAttribute('target')).toBe('_blank');
    await screenshot(page, 'run-trace-link.png');
  });
});
