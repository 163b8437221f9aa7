import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTracked, stopProcess } from '../helpers/process.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

// Every strategy against a real llama.cpp server (llama-server with --jinja, a small model with a
// real tokenizer and the Qwen2.5 tool-use chat template): each phase's request is one the server
// accepts, and the built-in tools' schemas compile to its grammar. The model's weights are random,
// so what is judged is what the server accepts and that each run ends once, never the answers.
//
// The server build comes from STEPWISE_LLAMA_SERVER_DIR, or the llama-server folder of the tools
// beside the project (../shared/tools/llama-server): its setup.sh unpacks the build, writes the
// model and starts the server. Without it the test is skipped, and says so.

const root = join(import.meta.dirname, '..', '..');
const toolDir = process.env.STEPWISE_LLAMA_SERVER_DIR ?? join(root, '..', 'shared', 'tools', 'llama-server');
const setup = join(toolDir, 'setup.sh');
const available = existsSync(setup) && existsSync(join(toolDir, 'llama-server-bundle.tgz'));
const why = available
  ? ''
  : ` (skipped: no llama-server build at ${toolDir}; set STEPWISE_LLAMA_SERVER_DIR to a folder with setup.sh and llama-server-bundle.tgz)`;
if (!available) console.warn(`local-model-server${why}`);

/** A whole run's budget on a busy machine: replies are capped at 48 tokens, a few dozen calls in all. */
const RUN_TIMEOUT_MS = 180_000;

let dir: string;
let llamaPid: number | undefined;
let baseUrl: string;
let server: TestServer | undefined;

/** Waits until the server answers its health check (it loads the model first), or fails when it exits. */
async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`llama-server exited (${child.exitCode ?? child.signalCode})`);
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

describe.skipIf(!available)(`a real llama.cpp server${why}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-llama-'));
    // setup.sh unpacks the server, writes the model and checks that it starts (it is stopped with the script's process group).
    const script = spawnTracked('bash', [setup], {
      env: { ...process.env, RM_DIR: dir, RM_PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
      description: 'llama-server setup',
    });
    let output = '';
    script.stdout?.on('data', (chunk: Buffer) => (output += chunk));
    script.stderr?.on('data', (chunk: Buffer) => (output += chunk));
    const [code] = (await once(script, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`llama-server did not start:\n${output}`);
    // Then the server the runs use, as setup.sh starts it, with replies capped at 48 tokens (a few seconds a run).
    const bundle = join(dir, 'bundle', 'llama-server');
    const port = await freePort();
    const log = openSync(join(dir, 'server.log'), 'w');
    const llama = spawnTracked(
      join(bundle, 'llama-server'),
      [
        '-m',
        join(dir, 'random-llama.gguf'),
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--alias',
        'local-model',
        '--jinja',
        '-c',
        '8192',
        '-np',
        '2',
        '-n',
        '48',
        '--logit-bias',
        '50258+1',
      ],
      { env: { ...process.env, LD_LIBRARY_PATH: bundle }, stdio: ['ignore', log, log], description: 'llama-server' },
    );
    closeSync(log);
    llamaPid = llama.pid;
    baseUrl = `http://127.0.0.1:${port}/v1`;
    await waitForHealth(`http://127.0.0.1:${port}/health`, llama);
    server = await startStepwiseWithModel(baseUrl, { OPENAI_API_KEY: 'none', LLM_MODEL: 'local-model', LLM_MAX_RETRIES: '1' });
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    await stopProcess(llamaPid);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'runs every strategy to one ending with no request refused and every tool schema compiled to a grammar',
    async () => {
      const client = await TestClient.connect(server!.wsUrl);
      try {
        for (const strategy of ['roa', 'plan_execute', 'autonomous', 'solver', 'research']) {
          const from = client.events.length;
          client.chat('What is 12*7?', { agent_mode: true, agent_max_steps: 1, strategy, tools: ['calculator', 'current_time'] });
          const events = await client.untilComplete({ from, timeoutMs: RUN_TIMEOUT_MS });
          const endings = events.filter((event) => ['agent_completion', 'agent_error', 'agent_stopped'].includes(String(event.update_type)));
          console.log(strategy, summarize(events).join(' '), endings.map((ending) => ending.message).join(' '));
          expect(endings, strategy).toHaveLength(1);
          // However the random model's run ended, the endpoint never refused a request.
          for (const ending of endings) expect(String(ending.message ?? ''), strategy).not.toMatch(/endpoint answered [45]\d\d/);
        }
      } finally {
        await client.close();
      }
      // The server writes its log through a buffer: it is whole once the server has exited.
      await stopProcess(llamaPid);
      const log = readFileSync(join(dir, 'server.log'), 'utf8');
      const refused = log.split('\n').filter((line) => /status=[45]\d\d/.test(line) && line.includes('/chat/completions'));
      expect(refused).toEqual([]);
      expect(log).toContain('/chat/completions');
      expect(log).not.toMatch(/failed to parse grammar/);
    },
    5 * RUN_TIMEOUT_MS,
  );
});
