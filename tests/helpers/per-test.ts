import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from './cleanup.ts';
import { stopAllProcesses } from './process.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from './stepwise.ts';
import { TestClient } from './ws-client.ts';

/** Anything a test opens and must close: a server, a client, a browser context, a model server. */
export interface Closable {
  close(): unknown;
}

/**
 * Registers the afterEach that closes what a test opened, newest first (a client before its
 * server, a server before its model), each even when one before it failed. Returns `open`, which
 * keeps a thing for that and hands it back.
 */
export function closeAfterEach(): <T extends Closable>(item: T) => T {
  const opened: Closable[] = [];
  afterEach(
    () =>
      closeAll(
        ...opened
          .splice(0)
          .reverse()
          .map((item) => () => item.close()),
      ),
    60_000,
  );
  return (item) => {
    opened.push(item);
    return item;
  };
}

/** A scripted model, the real server against it and a connected client. */
export interface ScriptedStepwise {
  llm: ScriptedLlmServer;
  server: TestServer;
  client: TestClient;
}

/**
 * The header of a test file that talks to the real server over a socket: `start(env)` starts a
 * scripted model, the server against it (these defaults, then `env`) and a client, all closed
 * after the test; `demo(env)` starts the server on the demo model (no delay) and a client instead;
 * `open` keeps anything else the test opens; `llm`, `server`, `client` are the ones the running
 * test started. With `eachTest`, every test starts with them started.
 */
export function useScriptedStepwise(defaults: Record<string, string> = {}, options: { eachTest?: boolean } = {}) {
  const open = closeAfterEach();
  let current: (Omit<ScriptedStepwise, 'llm'> & { llm?: ScriptedLlmServer }) | undefined;
  afterEach(() => {
    current = undefined;
  });
  const started = () => {
    if (!current) throw new Error('neither start() nor demo() has been called in this test');
    return current;
  };
  const stepwise = {
    open,
    async start(env: Record<string, string> = {}, model?: ScriptedLlmServer): Promise<ScriptedStepwise> {
      const llm = model ?? open(await ScriptedLlmServer.start());
      const server = open(await startStepwiseWithModel(llm.url, { ...defaults, ...env }));
      const client = open(await TestClient.connect(server.wsUrl));
      current = { llm, server, client };
      return { llm, server, client };
    },
    async demo(env: Record<string, string> = {}): Promise<{ server: TestServer; client: TestClient }> {
      const server = open(await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0', ...env }));
      current = { server, client: open(await TestClient.connect(server.wsUrl)) };
      return current;
    },
    get llm(): ScriptedLlmServer {
      const { llm } = started();
      if (!llm) throw new Error('this test runs on the demo model, not a scripted one');
      return llm;
    },
    get server() {
      return started().server;
    },
    get client() {
      return started().client;
    },
  };
  if (options.eachTest) beforeEach(() => stepwise.start());
  return stepwise;
}

/**
 * The header of a test that starts server processes. After each test: the sockets it keeps are
 * cut (the process at the other end may be gone), every process it started is killed, what it
 * opened is closed (newest first), and the folders it made are removed.
 */
export function useServerProcesses() {
  const sockets: TestClient[] = [];
  const opened: Closable[] = [];
  const folders: string[] = [];
  afterEach(async () => {
    for (const client of sockets.splice(0)) client.socket.terminate();
    await closeAll(
      () => stopAllProcesses({ signal: 'SIGKILL' }),
      ...opened
        .splice(0)
        .reverse()
        .map((item) => () => item.close()),
    );
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  }, 60_000);
  return {
    /** Keeps a client whose socket is cut after the test. */
    socket<T extends TestClient>(client: T): T {
      sockets.push(client);
      return client;
    },
    /** Keeps a thing to close after the test's processes are killed. */
    open<T extends Closable>(item: T): T {
      opened.push(item);
      return item;
    },
    /** A fresh folder under the system's temporary one, removed after the test. */
    folder(prefix: string): string {
      const folder = mkdtempSync(join(tmpdir(), prefix));
      folders.push(folder);
      return folder;
    },
  };
}

/** Something to close that cuts the client's socket (no close handshake, for a server that may not answer). */
export function cutting(client: TestClient): Closable {
  return { close: () => client.socket.terminate() };
}
