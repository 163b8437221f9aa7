import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EVERYTHING_STDIO, MCP_SERVERS, STDIO_RECORDER, startEverythingHttp, writeMcpConfig } from '../fixtures/mcp-servers.ts';
import { answerAfter, observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { stopAllProcesses } from '../helpers/process.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient, stepOf } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer;
let server: TestServer;
let client: TestClient;
/** What the current test opened: closed after it, whatever happened. */
const opened: { llm?: ScriptedLlmServer; server?: TestServer; client?: TestClient } = {};
const cleanups: Array<() => Promise<void>> = [];

/**
 * Each test starts real MCP servers (Node processes): on a busy machine starting one takes seconds.
 * Stepwise waits for them at startup as long as it takes (the tests look at the first tool list),
 * and a test may take this long overall.
 */
const MCP_TEST_TIMEOUT_MS = 90_000;
const MCP_ENV = { MCP_STARTUP_WAIT_MS: '60000' };
/** A limit for waits on the MCP servers' state (a reconnect is a new process). */
const WAIT_MS = 60_000;

type ToolInfo = { name: string; source: string; description: string; available?: boolean };
type ServerStatus = { name: string; status: string; error?: string; tools: number };

async function start(mcpServers: Record<string, unknown>, env: Record<string, string> = {}) {
  opened.llm = llm = await ScriptedLlmServer.start();
  opened.server = server = await startStepwiseWithModel(llm.url, {
    STEPWISE_CONFIG: writeMcpConfig(mcpServers),
    MCP_RETRY_BASE_MS: '100',
    MCP_RETRY_MAX_MS: '500',
    ...MCP_ENV,
    ...env,
  });
  opened.client = client = await TestClient.connect(server.wsUrl);
}

afterEach(async () => {
  const { client: openClient, server: openServer, llm: openLlm } = opened;
  delete opened.client;
  delete opened.server;
  delete opened.llm;
  // Closing the server ends the stdio MCP servers it started; last goes whatever the test spawned
  // itself and did not get to stop (server-everything over HTTP).
  await closeAll(
    () => openClient?.socket.terminate(),
    () => openServer?.close(),
    () => openLlm?.close(),
    ...cleanups.splice(0),
    () => stopAllProcesses(),
  );
}, 60_000);

/** The newest tool list the client heard: the session message's, or a later tools_changed. */
function latest(): { tools: ToolInfo[]; servers: ServerStatus[] } {
  const event = [...client.events].reverse().find((candidate) => candidate.type === 'tools_changed' || candidate.type === 'session')!;
  return { tools: event.tools as ToolInfo[], servers: (event.mcp_servers ?? []) as ServerStatus[] };
}

/** Waits until the newest tool list says the server has this status (looked at on every message). */
async function waitForServer(name: string, status: string): Promise<ServerStatus> {
  return client
    .waitUntil(() => latest().servers.find((candidate) => candidate.name === name && candidate.status === status), WAIT_MS)
    .catch(() => {
      throw new Error(`${name} never became ${status}: ${JSON.stringify(latest().servers)}`);
    });
}

/** Waits until the newest tool list has this tool, available. */
async function waitForTool(name: string): Promise<void> {
  await client
    .waitUntil(() => latest().tools.find((tool) => tool.name === name && tool.available !== false), WAIT_MS)
    .catch(() => {
      throw new Error(`tool ${name} never appeared`);
    });
}

/** Waits for a condition outside the socket (what the recorded server received, a process): checked every 20 ms. */
async function waitUntil(check: () => boolean, what: string, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One step that calls `tool` with `args`, then an observe with a final answer. */
function scriptToolStep(tool: string, args: Record<string, unknown>, id = 'call_1') {
  llm.enqueue(...answerAfter(`Use ${tool}.`, [{ id, name: tool, arguments: args }], 'Done.', 'All done.'));
}

/** server-everything behind the recorder: what it receives goes to `record`, its pid to `record.pid`. */
function recordedEverything() {
  const record = join(mkdtempSync(join(tmpdir(), 'stepwise-rec-')), 'stdin.jsonl');
  const entry = { command: process.execPath, args: [STDIO_RECORDER, process.execPath, MCP_SERVERS.everything, 'stdio'], env: { RECORD_FILE: record } };
  return { record, entry };
}

const recordedLines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { id?: number; method?: string; params?: Record<string, unknown> })
    : [];

describe('an MCP server over stdio (server-everything)', { timeout: MCP_TEST_TIMEOUT_MS }, () => {
  it('lists its tools as SERVER__TOOL with their JSON schemas and the server as source', async () => {
    await start({ everything: EVERYTHING_STDIO });
    const echo = client.session.tools.find((tool) => tool.name === 'everything__echo');
    expect(echo).toMatchObject({ source: 'everything', available: true });
    expect(echo!.description.length).toBeGreaterThan(0);
    expect(client.session.tools.find((tool) => tool.name === 'calculator')).toMatchObject({ source: 'builtin' });
    expect(latest().servers).toEqual([expect.objectContaining({ name: 'everything', status: 'connected', transport: 'stdio' })]);

    scriptToolStep('everything__echo', { message: 'hi' });
    client.chat('Echo hi', { agent_mode: true, tools: ['everything__echo'] });
    await client.untilComplete();
    const act = llm.requests.find((request) => request.phase === 'act')!;
    const schema = (act.body.tools as unknown as { function: { name: string; parameters: { properties: Record<string, unknown> } } }[]).find(
      (tool) => tool.function.name === 'everything__echo',
    );
    expect(Object.keys(schema!.function.parameters.properties)).toContain('message');
  });

  it('runs a call: the result reaches the tool card and the model', async () => {
    await start({ everything: EVERYTHING_STDIO });
    scriptToolStep('everything__get-sum', { a: 17, b: 25 });
    client.chat('Add 17 and 25', { agent_mode: true, tools: ['everything__get-sum'] });
    const events = await client.untilComplete();
    expect(summarize(events)).toContain('tool_complete:everything__get-sum');
    const complete = events.find((event) => event.type === 'tool_complete')!;
    expect(String(complete.result)).toContain('42');
    const observe = llm.requests.find((request) => request.phase === 'observe')!;
    expect(observe.body.messages.find((message) => message.role === 'tool')?.content).toContain('42');
  });

  it("passes a long call's progress reports on to the client, live and before its result", async () => {
    await start({ everything: EVERYTHING_STDIO });
    // Four reports, 300 ms apart, the last one right before the result.
    scriptToolStep('everything__trigger-long-running-operation', { duration: 1.2, steps: 4 });
    client.chat('Run it', { agent_mode: true, tools: ['everything__trigger-long-running-operation'] });
    const events = await client.untilComplete();
    const progress = events.filter((event) => event.type === 'tool_progress');
    // The MCP SDK handles a notification a microtask later than a response in the same read, and
    // forgets the call's progress handler on the response: a report that arrives together with the
    // result (usually the last one) is dropped there. The rest arrive, in order.
    const reports = progress.map((event) => [event.progress, event.total]);
    expect(reports.length).toBeGreaterThanOrEqual(2);
    expect(reports).toEqual(
      [
        [1, 4],
        [2, 4],
        [3, 4],
        [4, 4],
      ].slice(0, reports.length),
    );
    expect(progress[0]).toMatchObject({ step: 1, tool_call_id: 'call_1', tool_name: 'everything__trigger-long-running-operation' });
    expect(progress.every((event) => !('seq' in event))).toBe(true);
    const order = events.map((event) => event.type);
    expect(order.indexOf('tool_start')).toBeLessThan(order.indexOf('tool_progress'));
    expect(order.lastIndexOf('tool_progress')).toBeLessThan(order.indexOf('tool_complete'));
  });

  it('Stop cancels a long-running call on the server', async () => {
    const { record, entry } = recordedEverything();
    await start({ everything: entry });
    llm.enqueue(
      { text: reasonText('Run the long operation.') },
      { toolCalls: [{ id: 'long_1', name: 'everything__trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }] },
    );
    client.chat('Do the long thing', { agent_mode: true, tools: ['everything__trigger-long-running-operation'] });
    await client.waitFor('tool_start');
    await waitUntil(() => recordedLines(record).some((line) => line.method === 'tools/call'), 'the call to reach the server');
    const call = recordedLines(record).find((line) => line.method === 'tools/call')!;

    client.send({ type: 'agent_control', action: 'stop' });
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    await waitUntil(
      () => recordedLines(record).some((line) => line.method === 'notifications/cancelled' && line.params?.requestId === call.id),
      'notifications/cancelled for the call',
    );
  });

  it('a server that exits mid-call fails that call, is reported unavailable, and comes back', async () => {
    const { record, entry } = recordedEverything();
    await start(
      { everything: entry },
      // The first retry waits 250-500 ms: long enough that clients hear "unavailable" before "connecting".
      { MCP_RETRY_BASE_MS: '500' },
    );
    llm.enqueue(
      ...answerAfter(
        'Run the long operation.',
        [{ id: 'long_1', name: 'everything__trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }],
        'The server went away.',
        'The tool failed.',
      ),
    );
    client.chat('Do the long thing', { agent_mode: true, tools: ['everything__trigger-long-running-operation'] });
    await waitUntil(() => recordedLines(record).some((line) => line.method === 'tools/call'), 'the call to reach the server');
    process.kill(Number(readFileSync(`${record}.pid`, 'utf8')), 'SIGKILL');

    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'tool_error')!;
    expect(failure).toMatchObject({ tool_name: 'everything__trigger-long-running-operation' });
    expect(String(failure.error)).toMatch(/went away/);
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
    const observe = llm.requests.find((request) => request.phase === 'observe')!;
    expect(observe.body.messages.find((message) => message.role === 'tool')?.content).toMatch(/went away/);

    // Reported (the tool list says so) and retried until it is back; then calls work again.
    await client.next((event) => event.type === 'tools_changed' && (event.mcp_servers as ServerStatus[])[0]?.status === 'unavailable');
    await waitForServer('everything', 'connected');
    const from = client.events.length;
    scriptToolStep('everything__echo', { message: 'again' }, 'call_2');
    client.chat('Echo again', { agent_mode: true, tools: ['everything__echo'] });
    const again = await client.untilComplete({ from });
    expect(String(again.find((event) => event.type === 'tool_complete')?.result)).toContain('again');
  });

  it('shutting Stepwise down ends the stdio servers it started', async () => {
    const { record, entry } = recordedEverything();
    await start({ everything: entry });
    const pid = Number(readFileSync(`${record}.pid`, 'utf8'));
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await client.close();
    await server.close();
    await waitUntil(() => !alive(), 'the server process to end');
  });

  it('a server that cannot start is reported and retried, and the app keeps serving', async () => {
    await start({ broken: { command: 'stepwise-no-such-command-xyz', args: [] } });
    const status = await waitForServer('broken', 'unavailable');
    expect(status.error).toMatch(/not found|ENOENT/);
    expect(latest().tools.some((tool) => tool.source === 'broken')).toBe(false);

    llm.enqueue({ text: 'Still here.' });
    client.chat('Hello');
    expect(summarize(await client.untilComplete())).toEqual(['assistant_message', 'response_complete']);
    // A run that names a tool of the broken server is refused clearly, not crashed.
    client.chat('Use it', { agent_mode: true, tools: ['broken__anything'] });
    expect(await client.waitFor('error')).toMatchObject({ code: 'unknown_tool' });
  });

  it('saves an image result as a session file and gives the model a reference to it', async () => {
    await start({ everything: EVERYTHING_STDIO });
    scriptToolStep('everything__get-tiny-image', {});
    client.chat('Show me the tiny image', { agent_mode: true, tools: ['everything__get-tiny-image'] });
    const events = await client.untilComplete();
    const saved = events.find((event) => event.type === 'file_saved')!;
    expect(saved).toMatchObject({ source: 'everything', file: { name: expect.stringMatching(/^everything-image-[0-9a-f]+\.png$/) } });
    const result = String(events.find((event) => event.type === 'tool_complete')?.result);
    expect(result).toContain(`saved as session file "${(saved.file as { name: string }).name}"`);
    expect(result).not.toMatch(/[A-Za-z0-9+/]{200}/);
    const listed = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files`).then((response) => response.json());
    expect(listed.files.map((file: { name: string }) => file.name)).toContain((saved.file as { name: string }).name);
  });

  it("asks the user the server's elicitation question through agent_request_input", async () => {
    await start({ everything: EVERYTHING_STDIO });
    await waitForTool('everything__trigger-elicitation-request');
    scriptToolStep('everything__trigger-elicitation-request', {});
    // Not read-only, so it would ask for approval first: this test is about the elicitation, so it runs unasked.
    client.chat('Fill in the form', {
      agent_mode: true,
      tools: ['everything__trigger-elicitation-request'],
      tool_approval: { 'everything__trigger-elicitation-request': 'auto' },
    });
    const question = await client.waitFor('agent_request_input');
    expect(question).toMatchObject({ step: 1, tool_call_id: 'call_1' });
    expect(String(question.question)).toContain('- name (string, required)');

    client.send({ type: 'agent_user_input', content: 'Ada Lovelace' });
    const events = await client.untilComplete();
    const result = String(events.find((event) => event.type === 'tool_complete')?.result);
    expect(result).toContain('Name: Ada Lovelace');
  });
});

describe('two questions pending at once (two calls that each elicit)', { timeout: MCP_TEST_TIMEOUT_MS }, () => {
  it('answers each by its question_id, out of order; an answer without id is ambiguous', async () => {
    await start({ everything: EVERYTHING_STDIO });
    const tool = 'everything__trigger-elicitation-request';
    await waitForTool(tool);
    llm.enqueue(
      { text: reasonText('Ask twice.') },
      {
        toolCalls: [
          { id: 'call_a', name: tool, arguments: {} },
          { id: 'call_b', name: tool, arguments: {} },
        ],
      },
      { text: observeText('Done.', { final_answer: 'Both forms filled.' }) },
    );
    client.chat('Fill in two forms', { agent_mode: true, tools: [tool], tool_approval: { [tool]: 'auto' } });
    const questions = () => client.events.filter((event) => event.update_type === 'agent_request_input');
    await client.waitUntil(() => (questions().length >= 2 ? true : undefined), WAIT_MS);
    const [first, second] = questions() as { question_id?: string }[];
    expect(first!.question_id).toMatch(/^q_/);
    expect(second!.question_id).toMatch(/^q_/);
    expect(first!.question_id).not.toBe(second!.question_id);

    const from = client.events.length;
    client.send({ type: 'agent_user_input', content: 'Nobody' });
    expect(await client.next((event) => event.type === 'error', { from })).toMatchObject({ code: 'ambiguous_input' });
    client.send({ type: 'agent_user_input', content: 'Grace Hopper', question_id: second!.question_id });
    client.send({ type: 'agent_user_input', content: 'Ada Lovelace', question_id: first!.question_id });
    const events = await client.untilComplete();
    const results = events.filter((event) => event.type === 'tool_complete').map((event) => String(event.result));
    expect(results).toHaveLength(2);
    // Each answer reached exactly one call, and no answer was lost or given twice.
    expect(results.filter((result) => result.includes('Name: Ada Lovelace'))).toHaveLength(1);
    expect(results.filter((result) => result.includes('Name: Grace Hopper'))).toHaveLength(1);
    expect(client.events.filter((event) => event.type === 'error').map((event) => event.code)).toEqual(['ambiguous_input']);
  });
});

describe('an MCP server over Streamable HTTP (server-everything)', { timeout: MCP_TEST_TIMEOUT_MS }, () => {
  it('lists its tools and runs a call', async () => {
    const remote = await startEverythingHttp();
    cleanups.push(remote.close);
    await start({ remote: { url: remote.url } });
    expect(latest().servers).toEqual([expect.objectContaining({ name: 'remote', status: 'connected', transport: 'http' })]);
    expect(client.session.tools.find((tool) => tool.name === 'remote__echo')).toMatchObject({ source: 'remote' });

    scriptToolStep('remote__echo', { message: 'over http' });
    client.chat('Echo over http', { agent_mode: true, tools: ['remote__echo'] });
    const events = await client.untilComplete();
    expect(String(events.find((event) => event.type === 'tool_complete')?.result)).toContain('over http');
  });
});

describe('server-filesystem in an agent run', { timeout: MCP_TEST_TIMEOUT_MS }, () => {
  it('reads and writes files through the MCP server, end to end', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'stepwise-fs-'));
    writeFileSync(join(shared, 'notes.txt'), 'The launch code is 4242.\n');
    await start({ fs: { command: process.execPath, args: [MCP_SERVERS.filesystem, shared] } });
    expect(client.session.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['fs__read_text_file', 'fs__write_file']));

    llm.enqueue(
      { text: reasonText('Read the notes.') },
      { toolCalls: [{ id: 'read_1', name: 'fs__read_text_file', arguments: { path: join(shared, 'notes.txt') } }] },
      { text: observeText('The code is 4242; write it down.') },
      { text: reasonText('Write the summary.') },
      { toolCalls: [{ id: 'write_1', name: 'fs__write_file', arguments: { path: join(shared, 'summary.txt'), content: 'code=4242' } }] },
      { text: observeText('Written.', { final_answer: 'The launch code is 4242; saved to summary.txt.' }) },
    );
    client.chat('What is the launch code? Save it.', {
      agent_mode: true,
      tools: ['fs__read_text_file', 'fs__write_file'],
      tool_approval: { fs__write_file: 'auto' },
    });
    const events = (await client.untilComplete({ timeoutMs: 30_000 })).filter((event) => 'seq' in event);
    expect(summarize(events)).toEqual([
      'agent_start',
      ...stepOf(1, 'fs__read_text_file'),
      ...stepOf(2, 'fs__write_file'),
      'assistant_message',
      'agent_completion:answered',
      'response_complete',
    ]);
    const observe = llm.requests.filter((request) => request.phase === 'observe')[0]!;
    expect(observe.body.messages.find((message) => message.role === 'tool')?.content).toContain('The launch code is 4242.');
    expect(readFileSync(join(shared, 'summary.txt'), 'utf8')).toBe('code=4242');
  });

  it('refuses a path outside the allowed folder (the server says so, the run goes on)', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'stepwise-fs-'));
    await start({ fs: { command: process.execPath, args: [MCP_SERVERS.filesystem, shared] } });
    scriptToolStep('fs__read_text_file', { path: '/etc/passwd' });
    client.chat('Read the password file', { agent_mode: true, tools: ['fs__read_text_file'] });
    const events = await client.untilComplete();
    const failure = events.find((event) => event.type === 'tool_error');
    expect(String(failure?.error)).toMatch(/denied|outside|not allowed/i);
    expect(summarize(events).slice(-1)).toEqual(['response_complete']);
  });
});

describe('an MCP tool with the offline demo model', { timeout: MCP_TEST_TIMEOUT_MS }, () => {
  it('calls a ticked tool that the message names, so a new user sees it work without a model', async () => {
    opened.server = server = await startStepwise({ LLM_PROVIDER: 'demo', STEPWISE_CONFIG: writeMcpConfig({ everything: EVERYTHING_STDIO }), ...MCP_ENV });
    opened.client = client = await TestClient.connect(server.wsUrl);
    client.chat('Please echo "hello from the demo"', { agent_mode: true, tools: ['everything__echo'] });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'tool_start')).toMatchObject({ tool_name: 'everything__echo', arguments: { message: 'hello from the demo' } });
    expect(String(events.find((event) => event.type === 'tool_complete')?.result)).toContain('Echo: hello from the demo');
    expect(String(events.find((event) => event.type === 'assistant_message')?.content)).toContain('hello from the demo');
  });
});
