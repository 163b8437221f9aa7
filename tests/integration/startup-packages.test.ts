import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess } from '../helpers/process.ts';
import { TestClient } from '../helpers/ws-client.ts';

const processes = useServerProcesses();

/** Packages only some settings use: a server on the defaults must not load them (each costs start-up time and memory). */
const OPTIONAL = ['pg', 'redis', '@restatedev/restate-sdk', 'core-js', '@modelcontextprotocol/sdk', 'openid-client', '@ag-ui/encoder', '@a2a-js/sdk'];

describe('a server on the defaults', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('loads none of the packages that only a cluster, Restate, MCP servers, OpenID sign-in or an AG-UI client use, through a chat', async () => {
    const dataDir = processes.folder('stepwise-startup-');
    const loads = join(dataDir, 'loads.txt');
    const preload = resolve(import.meta.dirname, '../fixtures/record-loads.mjs');
    const running = await startStepwiseProcess({ DATA_DIR: join(dataDir, 'data'), NODE_OPTIONS: `--import=${preload}`, LOADS_FILE: loads });
    const client = processes.socket(await TestClient.connect(running.wsUrl));
    client.chat('What is 6*7?', { agent_mode: true });
    const events = await client.untilComplete();
    expect(events.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'answered' });

    const packages = new Set(
      readFileSync(loads, 'utf8')
        .split('\n')
        .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*\/node_modules\/)/.exec(url)?.[1])
        .filter((name) => name !== undefined),
    );
    // The record is real: the packages every server uses are in it.
    expect([...packages]).toEqual(expect.arrayContaining(['fastify', 'openai', 'kysely', 'libsql']));
    expect(OPTIONAL.filter((name) => packages.has(name))).toEqual([]);
  });
});
