// Regenerates the pictures of a new user's first minutes in docs/screenshots/ (and docs/finished-run.png):
// the offline demo model, on a desktop (1280×800) and a phone (375×740), each on a fresh server.
// Needs the web app built (node scripts/build.mjs) and Chromium (CHROMIUM_PATH, default /usr/bin/chromium).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort, resolveFrom, root } from './run.mjs';

const OUT = join(root, 'docs', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 375, height: 740 },
};

const playwright = await import(pathToFileURL(resolveFrom('tests', 'playwright-core')).href);
const chromium = playwright.chromium ?? playwright.default.chromium;

mkdirSync(OUT, { recursive: true });
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
const written = [];
try {
  for (const [name, viewport] of Object.entries(VIEWPORTS)) {
    const server = await startServer();
    try {
      await firstMinutes(name, viewport, server.url);
    } finally {
      await server.stop();
    }
  }
  copyFileSync(join(OUT, 'desktop-2-run-finished.png'), join(root, 'docs', 'finished-run.png'));
  written.push(join(root, 'docs', 'finished-run.png'));
} finally {
  await browser.close();
}
for (const path of written) console.log(path);

/** The first minutes of a new user, one picture per moment. */
async function firstMinutes(device, viewport, url) {
  const context = await browser.newContext({ viewport, colorScheme: 'light', hasTouch: device === 'phone', isMobile: device === 'phone' });
  const page = await context.newPage();
  const shot = async (name) => {
    const path = join(OUT, `${device}-${name}.png`);
    await page.screenshot({ path });
    written.push(path);
  };
  const live = () => page.getByRole('status', { name: 'Connection: Live' }).waitFor();
  const ask = async (text) => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  const settle = () => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));

  // 1. The empty start.
  await page.goto(url);
  await live();
  await settle();
  await shot('1-empty');

  // 2. A multi-step run, finished: the calculator, then the clock.
  await ask('What is (17+25)*3, and what time is it?');
  await page
    .getByTestId('run-end')
    .getByText(/Answered in 2 steps/)
    .waitFor();
  await page.getByTestId('assistant-turn').waitFor();
  // The run has ended for the page too (response_complete): Send is back, Rewind is offered.
  await page.getByRole('button', { name: 'Send' }).waitFor();
  await settle();
  await shot('2-run-finished');

  // 3. A question pending: the request is too vague for the demo model.
  await page.goto(url);
  await live();
  await ask('Help me');
  await page.getByRole('alertdialog').waitFor();
  await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Your answer');
  // The banner flashes three times; the picture shows it at rest.
  await finiteAnimations(page);
  await shot('3-question-pending');

  // 4. A run stopped while its control block streamed: the picture shows only the prose before it.
  const controlBlockStreams = new Promise((resolve) => {
    page.on('websocket', (socket) =>
      socket.on('framereceived', ({ payload }) => {
        if (String(payload).includes('agent_reason_delta') && String(payload).includes('plan')) resolve();
      }),
    );
  });
  await page.goto(url);
  await live();
  await ask('What is 2^10 + 3*7?');
  await controlBlockStreams;
  await page.getByRole('button', { name: 'Stop' }).click();
  await page.getByTestId('run-end').getByText('Stopped').waitFor();
  await page.getByRole('button', { name: 'Send' }).waitFor();
  await settle();
  await shot('4-run-stopped');

  // 5. The chat list, with the first chat opened again from it (its finished run comes back folded).
  const chats = page.getByRole('navigation', { name: 'Chats' });
  if (device === 'phone') await page.getByRole('button', { name: 'Chats' }).click();
  await chats.getByRole('link', { name: /What is \(17\+25\)\*3/ }).click();
  await live();
  await page
    .getByTestId('run-end')
    .getByText(/Answered in 2 steps/)
    .waitFor();
  if (device === 'phone') await page.getByRole('button', { name: 'Chats' }).click();
  await chats.getByRole('link', { name: /Help me/ }).hover();
  await finiteAnimations(page);
  await shot('5-sidebar');

  // 6. Deleting a chat can be undone for a few seconds.
  await chats.getByRole('button', { name: 'Delete “Help me”' }).click();
  await page.getByTestId('undo-toast').waitFor();
  await shot('6-delete-undo');
  await page.getByTestId('undo-toast').getByRole('button', { name: 'Undo' }).click();

  await context.close();
}

/** Waits for the animations that end (a flash, a slide), not the spinners that go on forever. */
function finiteAnimations(page) {
  return page.evaluate(() =>
    Promise.all(
      document
        .getAnimations()
        .filter((animation) => Number.isFinite(animation.effect?.getComputedTiming().endTime ?? Infinity))
        .map((animation) => animation.finished.catch(() => undefined)),
    ),
  );
}

/** The real server on a free port with the demo model, its data in a fresh folder. */
async function startServer() {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-screenshots-'));
  // No MCP servers: the pictures show what a fresh checkout shows.
  writeFileSync(join(dataDir, 'config.json'), '{ "mcpServers": {} }\n');
  const tsx = pathToFileURL(resolveFrom('backend', 'tsx')).href;
  const child = spawn(process.execPath, ['--import', tsx, join(root, 'backend', 'src', 'main.ts')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: join(root, 'backend', 'tsconfig.json'),
      PORT: String(port),
      HOST: '127.0.0.1',
      LLM_PROVIDER: 'demo',
      // Slow enough that the stop lands while the reasoning streams.
      DEMO_DELAY_MS: '60',
      DATA_DIR: dataDir,
      STEPWISE_CONFIG: join(dataDir, 'config.json'),
      LOG_LEVEL: 'warn',
    },
  });
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`The server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/api/health`)).ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() - started > 60_000) {
      child.kill('SIGKILL');
      throw new Error('The server did not start within a minute');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
