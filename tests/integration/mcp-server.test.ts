// Stepwise as an MCP server: the MCP SDK's own client, over Streamable HTTP at /mcp, lists the
// tools, runs a roa run to its answer with progress, answers a question and an approval by
// elicitation, cancels a run (which stops, its receipt logged), and reads the chats as resources.
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { answerAfter, observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { closeAll } from '../helpers/cleanup.ts';
import { startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';

const TOKEN = 'mcp-server-test-token-0123456789';
let llm: ScriptedLlmServer;
let server: TestServer;
const clients: Client[] = [];

beforeAll(async () => {
  llm = await ScriptedLlmServer.start();
  server = await startStepwiseWithModel(llm.url, { AUTH_TOKEN: TOKEN });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await closeAll(
    () => server?.close(),
    () => llm?.close(),
  );
});

/** An MCP client of Stepwise; `answer` makes it take elicitations, answering each with what it returns. */
async function connect(answer?: (request: ElicitRequest['params']) => ElicitResult): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: answer ? { elicitation: { form: {} } } : {} });
  if (answer) client.setRequestHandler(ElicitRequestSchema, (request) => answer(request.params));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  clients.push(client);
  return client;
}

type RunResult = { answer: string; chat_id: string; run_id?: string; status: string; ending: string };

const chatOf = async (id: string) =>
  (await (await fetch(`${server.url}/api/sessions/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
    runs: { status: string; end_reason?: string }[];
  };

describe('Stepwise as an MCP server (/mcp)', () => {
  it('lists run_agent with the strategies and runs a roa run to its answer, with a progress notification per step', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const run = tools.find((tool) => tool.name === 'run_agent')!;
    expect((run.inputSchema.properties as Record<string, { enum?: string[] }>).strategy!.enum).toEqual(
      expect.arrayContaining(['roa', 'plan_execute', 'autonomous', 'solver', 'research']),
    );
    llm.enqueue(...answerAfter('Use the calculator.', [{ name: 'calculator', arguments: { expression: '6*7' } }], 'It is 42.', 'The answer is 42.'));
    const progress: string[] = [];
    const result = await client.callTool({ name: 'run_agent', arguments: { prompt: 'What is 6*7?', strategy: 'roa' } }, undefined, {
      onprogress: (notification) => void progress.push(String(notification.message)),
    });
    expect(result.isError).toBeFalsy();
    const output = result.structuredContent as RunResult;
    expect(output).toMatchObject({ answer: 'The answer is 42.', status: 'completed', ending: 'answered' });
    expect(result.content).toEqual([{ type: 'text', text: 'The answer is 42.' }]);
    expect(progress).toEqual(['Step 1', 'Tool calculator']);
    // The run is a chat like any other, listed as a resource.
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toContain(`stepwise://chats/${output.chat_id}`);
    const read = await client.readResource({ uri: `stepwise://chats/${output.chat_id}` });
    expect(JSON.parse(String((read.contents[0] as { text: string }).text)).runs.at(-1).status).toBe('completed');
  });

  it('asks a question and an approval by elicitation and goes on with the answers', async () => {
    const asked: ElicitRequest['params'][] = [];
    const client = await connect((request) => {
      asked.push(request);
      const properties = (request as { requestedSchema: { properties: Record<string, unknown> } }).requestedSchema.properties;
      const content: Record<string, string> = 'decision' in properties ? { decision: 'deny', reason: 'not now' } : { answer: 'out.txt' };
      return { action: 'accept', content };
    });
    llm.enqueue(
      { text: reasonText('Ask where.') },
      { toolCalls: [{ id: 'q1', name: 'request_input', arguments: { question: 'Which file?' } }] },
      { text: observeText('Write it.') },
      { text: reasonText('Write it.') },
      { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'out.txt', content: 'hello' } }] },
      { text: observeText('Denied.', { final_answer: 'I did not write it.' }) },
    );
    const result = await client.callTool({ name: 'run_agent', arguments: { prompt: 'Write hello to a file' } });
    expect(result.structuredContent).toMatchObject({ answer: 'I did not write it.', status: 'completed' });
    expect(asked.map((request) => request.message)).toEqual([expect.stringContaining('Which file?'), expect.stringMatching(/write_file/)]);
    const toolResults = llm.requests.flatMap((request) => request.body.messages.filter((message) => message.role === 'tool').map((message) => message.content));
    expect(toolResults).toContain('out.txt');
    expect(toolResults.some((content) => content?.includes('denied this call: not now'))).toBe(true);
  });

  it('a caller without elicitation gets the question, and its next run_agent in the chat answers it', async () => {
    const client = await connect();
    llm.enqueue(...answerAfter('Ask.', [{ name: 'request_input', arguments: { question: 'Which city?' } }], 'Paris.', 'Paris it is.'));
    const first = await client.callTool({ name: 'run_agent', arguments: { prompt: 'Plan my trip' } });
    const waiting = first.structuredContent as RunResult;
    expect(waiting).toMatchObject({ status: 'waiting', ending: 'question' });
    expect((first.content as { text: string }[])[0]!.text).toMatch(/Which city\?/);
    const rest = await client.callTool({ name: 'run_agent', arguments: { prompt: 'Paris', chat_id: waiting.chat_id } });
    expect(rest.structuredContent).toMatchObject({ answer: 'Paris it is.', status: 'completed', run_id: waiting.run_id });
  });

  it('the caller’s cancellation stops the run, and its stop receipt is logged', async () => {
    const client = await connect();
    llm.enqueue({ text: 'Thinking', stallAfterChunks: 1 });
    const chatId = randomUUID();
    const abort = new AbortController();
    const call = client.callTool({ name: 'run_agent', arguments: { prompt: 'Think hard', chat_id: chatId } }, undefined, {
      signal: abort.signal,
      onprogress: () => abort.abort(),
    });
    await expect(call).rejects.toThrow();
    await vi.waitFor(async () => expect((await chatOf(chatId)).runs.at(-1)?.status).toBe('stopped'), { timeout: 30_000, interval: 50 });
    const events = (await (await fetch(`${server.url}/api/sessions/${chatId}/events`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      events: { update_type?: string; reason?: string }[];
    };
    expect(events.events.find((event) => event.update_type === 'agent_stopped')).toMatchObject({ reason: 'user' });
  });

  it('needs the access token; another session id is not found', async () => {
    const bare = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(bare.status).toBe(401);
    const unknown = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${TOKEN}`,
        'mcp-session-id': randomUUID(),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(unknown.status).toBe(404);
  });
});
