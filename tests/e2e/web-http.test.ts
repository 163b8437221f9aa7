import { describe, expect, it } from 'vitest';
import { ask, BROWSER_TEST_TIMEOUT_MS, screenshot, seriousViolations, useWebApp } from './browser.ts';

// The app as a browser gets it over HTTP: its headers, its cached and compressed files, and what
// axe-core finds on its screens.
const web = useWebApp();

describe('the web app over HTTP', { timeout: 2 * BROWSER_TEST_TIMEOUT_MS }, () => {
  it('sends a CSP the app runs under, immutable compressed assets, and passes axe-core on its screens', async () => {
    const server = await web.demo();
    const context = web.open(await web.browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' }));
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) blocked.push(message.text());
    });
    await page.exposeFunction('reportCspViolation', (text: string) => blocked.push(text));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) =>
        (window as unknown as { reportCspViolation: (text: string) => void }).reportCspViolation(
          `${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}:${event.columnNumber}`,
        ),
      );
    });
    const assets: { url: string; headers: Record<string, string> }[] = [];
    page.on('response', (response) => {
      if (new URL(response.url()).pathname.startsWith('/assets/')) assets.push({ url: response.url(), headers: response.headers() });
    });

    const landing = await page.goto(server.url);
    const headers = landing!.headers();
    expect(headers['content-security-policy']).toMatch(/script-src 'self'(;|$)/);
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['cache-control']).toBe('no-cache');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();

    // Vite's hashed files are cached for good; the entry script and style sheet (files under
    // 1 KiB are not worth it) come compressed, with Brotli, which Chromium asks for.
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) expect(asset.headers['cache-control'], asset.url).toBe('public, max-age=31536000, immutable');
    const entries = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLScriptElement | HTMLLinkElement>('head script[type=module][src], head link[rel=stylesheet]')].map((element) =>
        'src' in element ? element.src : element.href,
      ),
    );
    expect(entries.length).toBeGreaterThanOrEqual(2);
    for (const entry of entries) expect(assets.find((asset) => asset.url === entry)?.headers['content-encoding'], entry).toBe('br');

    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'http-first-screen.png');

    await ask(page, 'What is 6*7?');
    await page.getByTestId('run-end').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'http-finished-run.png');

    await page.getByRole('button', { name: 'Settings' }).click();
    await page.getByRole('dialog', { name: 'Settings' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'http-settings.png');

    expect(blocked).toEqual([]);
  });

  it('sends gzip to a client that accepts only gzip, and the plain file to one that accepts neither', async () => {
    const server = await web.demo();
    const html = await (await fetch(server.url, { headers: { 'accept-encoding': 'identity' } })).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const gzip = await fetch(`${server.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    expect(gzip.headers.get('vary')).toMatch(/accept-encoding/i);
    const plain = await fetch(`${server.url}${script}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    // fetch undoes the compression: both bodies are the same script.
    expect(await gzip.text()).toBe(await plain.text());
  });
});
