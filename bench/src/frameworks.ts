import { OpenAIChatCompletionsModel, Agent as OpenAiAgent, run as runAgent, setTracingDisabled, tool as agentsTool } from '@openai/agents';
import { createOpenAI } from '@ai-sdk/openai';
import { tool as langchainTool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, stepCountIs, tool as aiTool } from 'ai';
import { createServer as createHttp2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import pg from 'pg';
import WebSocket from 'ws';
import { z } from 'zod';
import { sqliteJournal } from './sqlite-journal.ts';

/** One framework as the benchmarks drive it. */
export interface Framework {
  readonly name: string;
  /** Gets ready for the next task outside the timed part (Stepwise with a new chat: opens its socket). */
  prepare?(): Promise<void>;
  /** Runs the K-step calculator task once; resolves with the number of model calls it made. */
  task(steps: number): Promise<number>;
  /**
   * Starts a task whose prompt is `marker`, aborts it once `inFlight` says its model request has
   * reached the model server; resolves with when the abort was asked and when the caller saw it end.
   */
  stop(marker: string, inFlight: () => Promise<void>): Promise<{ stopAt: number; endedAt: number }>;
  close(): Promise<void>;
}

export const now = () => performance.timeOrigin + performance.now();
export const PROMPT = 'Count with the calculator.';

/** Starts a call with an AbortSignal, aborts it once its request is in flight, and times the end. */
async function abortInFlight(start: (signal: AbortSignal) => Promise<unknown>, inFlight: () => Promise<void>) {
  const controller = new AbortController();
  const done = start(controller.signal).catch(() => undefined);
  await inFlight();
  const stopAt = now();
  controller.abort();
  await done;
  return { stopAt, endedAt: now() };
}
export const add = (expression: string) => String(Number(expression.split('+')[0]) + 1);
export const calculatorArgs = z.object({ expression: z.string() });

/** The calculator tool as the floor's loops offer it. */
const FLOOR_TOOLS = [{ type: 'function' as const, function: { name: 'calculator', description: 'Evaluate', parameters: z.toJSONSchema(calculatorArgs) } }];

/** The floor's loop: model calls (made by `call`) until a reply asks for no tool, each tool call answered inline. */
async function floorTask(call: (messages: OpenAI.Chat.ChatCompletionMessageParam[]) => Promise<OpenAI.Chat.ChatCompletionMessage>): Promise<number> {
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: PROMPT }];
  for (let calls = 1; ; calls++) {
    const message = await call(messages);
    const toolCall = message.tool_calls?.[0];
    if (toolCall?.type !== 'function') return calls;
    messages.push(message, { role: 'tool', tool_call_id: toolCall.id, content: add(JSON.parse(toolCall.function.arguments).expression) });
  }
}

/** One model call of the floor, as the bare SDK makes it. */
const modelCall = (client: OpenAI) => async (messages: OpenAI.Chat.ChatCompletionMessageParam[]) =>
  (await client.chat.completions.create({ model: 'bench', messages, tools: FLOOR_TOOLS })).choices[0]!.message;

/**
 * One model call of the floor with `stream: true`: the reply read chunk by chunk through the SDK's
 * stream and put together (its text and its tool calls), as an app that shows text as it comes does;
 * it asks for the usage chunk, as Stepwise and the peers do.
 */
const streamedModelCall = (client: OpenAI) => async (messages: OpenAI.Chat.ChatCompletionMessageParam[]) => {
  let content = '';
  const calls: { id: string; name: string; arguments: string }[] = [];
  const stream = await client.chat.completions.create({ model: 'bench', messages, tools: FLOOR_TOOLS, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta;
    if (delta?.content) content += delta.content;
    for (const part of delta?.tool_calls ?? []) {
      calls[part.index] ??= { id: '', name: '', arguments: '' };
      const call = calls[part.index]!;
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
    }
  }
  const message: OpenAI.Chat.ChatCompletionMessage = { role: 'assistant', content, refusal: null };
  if (calls.length) message.tool_calls = calls.map(({ id, name, arguments: args }) => ({ id, type: 'function', function: { name, arguments: args } }));
  return message;
};

/**
 * The floor's loop in a framework's shape, each reply handed to `journal` (with the task's number and
 * the call's) before its tool runs.
 */
function sdkLoop(
  baseURL: string,
  name: string,
  journal?: (message: OpenAI.Chat.ChatCompletionMessage, task: number, call: number) => void | Promise<void>,
  streaming = false,
): Framework {
  const client = new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0 });
  const call = (streaming ? streamedModelCall : modelCall)(client);
  let tasks = 0;
  return {
    name,
    task() {
      const task = ++tasks;
      let calls = 0;
      return floorTask(async (messages) => {
        const message = await call(messages);
        await journal?.(message, task, ++calls);
        return message;
      });
    },
    stop: (marker, inFlight) =>
      abortInFlight((signal) => client.chat.completions.create({ model: 'bench', messages: [{ role: 'user', content: marker }] }, { signal }), inFlight),
    async close() {},
  };
}

/** The floor: the same model calls with the bare openai SDK, tool calls answered inline. */
export function bareOpenAi(baseURL: string): Framework {
  return sdkLoop(baseURL, 'openai SDK (floor)');
}

/** The floor's loop with every reply streamed (`stream: true`): what reading a stream costs the bare SDK. */
export function streamedOpenAi(baseURL: string): Framework {
  return sdkLoop(baseURL, 'openai SDK, streaming', undefined, true);
}

/**
 * The floor with one durable step added: each reply written to an embedded SQLite journal (WAL;
 * synchronous=normal as Stepwise's default, or full) and committed before its tool runs. No event
 * log, no socket, no history read. Not a framework: what one journal commit per model call costs
 * by itself on this store, beside agents that journal their calls.
 */
export function journaledFloor(baseURL: string, sync: 'normal' | 'full' = 'normal', streaming = false): Framework {
  const journal = sqliteJournal(sync);
  const loop = sdkLoop(
    baseURL,
    `openai SDK${streaming ? ', streaming,' : ''} + a journal commit per call (synchronous=${sync})`,
    (message, task, call) => journal.commit(String(task), call, message),
    streaming,
  );
  return { ...loop, close: async () => journal.close() };
}

/** The same on PostgreSQL: each reply inserted (one statement, one round trip, its own commit) before its tool runs. */
export async function journaledFloorPg(baseURL: string, databaseUrl: string, streaming = false): Promise<Framework> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('create table journal (run text not null, seq integer not null, entry jsonb not null, primary key (run, seq))');
  const loop = sdkLoop(
    baseURL,
    `openai SDK${streaming ? ', streaming,' : ''} + a PostgreSQL journal commit per call`,
    async (message, task, call) => {
      await client.query({
        name: 'journal',
        text: 'insert into journal (run, seq, entry) values ($1, $2, $3)',
        values: [String(task), call, JSON.stringify(message)],
      });
    },
    streaming,
  );
  return { ...loop, close: () => client.end() };
}

/**
 * The floor on Restate: the same loop as a Restate service handler, each model call inside a
 * ctx.run step (journaled by restate-server before the handler acts on its reply). One invocation
 * per task, through the ingress. Not a framework: what one Restate journal step per model call
 * costs by itself, which RUN_ENGINE=restate pays for each call.
 */
export async function restateFloor(baseURL: string, ingressUrl: string, adminUrl: string): Promise<Framework> {
  // The SDK needs Promise.withResolvers (Node 22+): the standard polyfill, for Node 20.
  // @ts-expect-error: the polyfill has no types; it is imported for its effect on Promise.
  await import('core-js/actual/promise/with-resolvers.js');
  // The SDK logs every invocation at INFO to the console, the runner's output.
  process.env.RESTATE_LOGGING ??= 'WARN';
  const restate = await import('@restatedev/restate-sdk');
  const call = modelCall(new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0 }));
  const service = restate.service({
    name: 'BenchFloor',
    handlers: {
      task: (ctx: import('@restatedev/restate-sdk').Context) => floorTask((messages) => ctx.run('bench floor call', () => call(messages))),
    },
  });
  const server = createHttp2Server(restate.endpoint().bind(service).http2Handler());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const registered = await fetch(`${adminUrl}/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri: `http://127.0.0.1:${port}`, force: true }),
  });
  if (!registered.ok) throw new Error(`restate-server refused the deployment: ${registered.status} ${await registered.text()}`);
  return {
    name: 'openai SDK calls, each a Restate ctx.run step',
    async task() {
      const response = await fetch(`${ingressUrl}/BenchFloor/task`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'null' });
      if (!response.ok) throw new Error(`Restate's ingress answered ${response.status}: ${await response.text()}`);
      return Number(await response.json());
    },
    stop: () => Promise.reject(new Error('not measured')),
    async close() {
      server.close();
    },
  };
}

/** The Agents SDK's agent for the calculator task, on Chat Completions, tracing off. */
export function calculatorAgent(baseURL: string): OpenAiAgent {
  setTracingDisabled(true);
  const model = new OpenAIChatCompletionsModel(new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0 }), 'bench');
  const calculator = agentsTool({
    name: 'calculator',
    description: 'Evaluate',
    parameters: calculatorArgs,
    execute: async ({ expression }) => add(expression),
  });
  return new OpenAiAgent({ name: 'bench', instructions: 'Use the calculator.', model, tools: [calculator] });
}

export function openAiAgents(baseURL: string): Framework {
  const agent = calculatorAgent(baseURL);
  return {
    name: 'OpenAI Agents SDK',
    async task(steps) {
      const result = await runAgent(agent, PROMPT, { maxTurns: steps + 5 });
      return result.rawResponses.length;
    },
    stop: (marker, inFlight) => abortInFlight((signal) => runAgent(agent, marker, { signal }), inFlight),
    async close() {},
  };
}

export function vercelAi(baseURL: string): Framework {
  const model = createOpenAI({ baseURL, apiKey: 'bench' }).chat('bench');
  const tools = { calculator: aiTool({ description: 'Evaluate', inputSchema: calculatorArgs, execute: async ({ expression }) => add(expression) }) };
  return {
    name: 'Vercel AI SDK',
    async task(steps) {
      const result = await generateText({ model, prompt: PROMPT, tools, stopWhen: stepCountIs(steps + 2), maxRetries: 0 });
      return result.steps.length;
    },
    stop: (marker, inFlight) => abortInFlight((signal) => generateText({ model, prompt: marker, tools, abortSignal: signal, maxRetries: 0 }), inFlight),
    async close() {},
  };
}

export function langGraph(baseURL: string): Framework {
  const llm = new ChatOpenAI({ model: 'bench', apiKey: 'bench', configuration: { baseURL }, maxRetries: 0 });
  const calculator = langchainTool(async ({ expression }: { expression: string }) => add(expression), {
    name: 'calculator',
    description: 'Evaluate',
    schema: calculatorArgs,
  });
  const agent = createReactAgent({ llm, tools: [calculator] });
  return {
    name: 'LangGraph.js',
    async task(steps) {
      const result = await agent.invoke({ messages: [{ role: 'user', content: PROMPT }] }, { recursionLimit: 2 * steps + 10 });
      return result.messages.filter((message) => message.getType() === 'ai').length;
    },
    stop: (marker, inFlight) => abortInFlight((signal) => agent.invoke({ messages: [{ role: 'user', content: marker }] }, { signal }), inFlight),
    async close() {},
  };
}

/**
 * N sessions in lockstep with the bare openai SDK: all start at once, each makes `calls` model
 * calls one after another (its conversation growing as a chat's would), and notes the lag between
 * the model server stamping each reply and this process having it parsed. The same shape of load
 * as N Stepwise sessions running at once, with nothing but the SDK between model and caller. A
 * call that fails (at thousands of connections opened at once some are refused) ends its session
 * and is counted, as a Stepwise run that fails is.
 */
/**
 * How the bare client reads each reply: whole, as a stream put together from its chunks, or as a
 * stream and then committed to an embedded SQLite journal (synchronous=normal, Stepwise's default)
 * before it counts as received: the bound that keeps Stepwise's promise (a reply stored before
 * anyone is shown it) without anything else of a server.
 */
export type LockstepClient = 'whole' | 'streaming' | 'streaming-journal';

export async function bareLockstep(
  baseURL: string,
  sessions: number,
  calls: number,
  how: LockstepClient = 'whole',
): Promise<{ totalMs: number; lags: number[]; failedCalls: number }> {
  const client = new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0, timeout: 600_000 });
  const journal = how === 'streaming-journal' ? sqliteJournal('normal') : undefined;
  const lags: number[] = [];
  let failedCalls = 0;
  const reply = async (messages: OpenAI.Chat.ChatCompletionMessageParam[]) => {
    if (how === 'whole') return (await client.chat.completions.create({ model: 'bench', messages })).choices[0]!.message.content ?? '';
    let content = '';
    for await (const chunk of await client.chat.completions.create({ model: 'bench', messages, stream: true }))
      content += chunk.choices[0]?.delta?.content ?? '';
    return content;
  };
  const session = async (_: unknown, index: number) => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'lockstep' }];
    for (let call = 0; call < calls; call++) {
      let content: string;
      try {
        content = await reply(messages);
      } catch {
        failedCalls++;
        return;
      }
      journal?.commit(String(index), call, { role: 'assistant', content });
      const received = now();
      const sentAt = Number(/(\d{13}\.\d+)/.exec(content)?.[1]);
      if (sentAt) lags.push(received - sentAt);
      messages.push({ role: 'assistant', content }, { role: 'user', content: 'lockstep, next' });
    }
  };
  try {
    const started = now();
    await Promise.all(Array.from({ length: sessions }, session));
    return { totalMs: now() - started, lags, failedCalls };
  } finally {
    journal?.close();
  }
}

/** How the Stepwise worker uses chats: a new one per task, or one for every task (its history growing). */
export type StepwiseChat = 'fresh' | 'growing';

/** Stepwise over its real WebSocket, a run per task, in a new session per task or in one growing session. */
export async function stepwise(wsUrl: string, chat: StepwiseChat): Promise<Framework> {
  let connection = await connect(wsUrl);
  return {
    name: 'Stepwise',
    async prepare() {
      if (chat === 'growing') return;
      await connection.close();
      connection = await connect(wsUrl);
    },
    async task(steps) {
      const { next, listeners, socket } = connection;
      const complete = next((event) => event.type === 'response_complete');
      let calls = 0;
      const count = (event: Record<string, unknown>) => {
        if (event.update_type === 'agent_reason' || event.update_type === 'agent_observe') calls++;
        if (event.type === 'tool_start') calls++; // the act call that asked for it
      };
      listeners.add(count);
      socket.send(JSON.stringify({ type: 'chat', content: PROMPT, agent_mode: true, agent_max_steps: steps, tools: ['calculator'] }));
      await complete;
      listeners.delete(count);
      return calls;
    },
    async stop(marker, inFlight) {
      const { next, socket } = connection;
      const started = next((event) => event.update_type === 'agent_turn_start');
      const stopped = next((event) => event.update_type === 'agent_stopped');
      const complete = next((event) => event.type === 'response_complete');
      socket.send(JSON.stringify({ type: 'chat', content: marker, agent_mode: true }));
      await started;
      await inFlight();
      const stopAt = now();
      socket.send(JSON.stringify({ type: 'agent_control', action: 'stop' }));
      await stopped;
      const endedAt = now();
      await complete;
      return { stopAt, endedAt };
    },
    async close() {
      await connection.close();
    },
  };
}

/** One Stepwise session: a socket, open once the server has sent `session`. */
async function connect(wsUrl: string) {
  const socket = new WebSocket(wsUrl);
  const listeners = new Set<(event: Record<string, unknown>) => void>();
  socket.on('message', (data) => {
    const event = JSON.parse(data.toString()) as Record<string, unknown>;
    for (const listener of listeners) listener(event);
  });
  const next = (predicate: (event: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const listener = (event: Record<string, unknown>) => {
        if (!predicate(event)) return;
        listeners.delete(listener);
        resolve(event);
      };
      listeners.add(listener);
    });
  const session = next((event) => event.type === 'session');
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  await session;
  return {
    socket,
    listeners,
    next,
    /** Closes the socket and waits for the server's close frame, so its cleanup is not timed with the next task. */
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close();
      }),
  };
}
