// The peers measured alike (section 1's fair rows): each streams every reply and persists every
// step to SQLite before the next, on the same scripted calculator task as the floor. They all use
// libsql, the SQLite Stepwise's embedded store and the floor's journal run on (native
// better-sqlite3 does not install here), with the journal's settings (WAL, synchronous=normal):
//   - LangGraph.js: its own SQLite checkpointer (@langchain/langgraph-checkpoint-sqlite's
//     SqliteSaver, written for better-sqlite3, given a libsql connection, whose API it shares);
//     a checkpoint after every node, the model's replies streamed (streamMode: 'messages');
//   - the Vercel AI SDK: streamText, each step's messages committed in onStepFinish (the SDK has no
//     store of its own; this is how its docs persist a chat);
//   - the OpenAI Agents SDK: a streamed run with a Session whose items go to SQLite (the JS SDK
//     ships MemorySession and a server-side session only; this Session is written here).
import { type AgentInputItem, run as runAgent, type Session } from '@openai/agents';
import { createOpenAI } from '@ai-sdk/openai';
import { tool as langchainTool } from '@langchain/core/tools';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { stepCountIs, streamText, tool as aiTool } from 'ai';
import { add, calculatorAgent, calculatorArgs, type Framework, PROMPT } from './frameworks.ts';
import { sqliteJournal } from './sqlite-journal.ts';

const notMeasured = () => Promise.reject(new Error('not measured'));

/** LangGraph's prebuilt ReAct agent, streaming, checkpointed to SQLite by its own saver (a thread per task). */
export function langGraphSqlite(baseURL: string): Framework {
  const journal = sqliteJournal();
  const llm = new ChatOpenAI({ model: 'bench', apiKey: 'bench', configuration: { baseURL }, maxRetries: 0, streaming: true });
  const calculator = langchainTool(async ({ expression }: { expression: string }) => add(expression), {
    name: 'calculator',
    description: 'Evaluate',
    schema: calculatorArgs,
  });
  const agent = createReactAgent({ llm, tools: [calculator], checkpointSaver: new SqliteSaver(journal.db as never) });
  let tasks = 0;
  return {
    name: 'LangGraph.js, streaming, SQLite checkpointer',
    async task(steps) {
      const config = { configurable: { thread_id: `task-${++tasks}` }, streamMode: 'messages' as const, recursionLimit: 2 * steps + 10 };
      const replies = new Set<string>();
      for await (const [message] of await agent.stream({ messages: [{ role: 'user', content: PROMPT }] }, config)) {
        if (message.getType() === 'ai' && message.id) replies.add(message.id);
      }
      return replies.size;
    },
    stop: notMeasured,
    async close() {
      journal.close();
    },
  };
}

/** The AI SDK's streamText, each step's messages committed to SQLite as the step finishes. */
export function vercelAiSqlite(baseURL: string): Framework {
  const journal = sqliteJournal();
  const model = createOpenAI({ baseURL, apiKey: 'bench' }).chat('bench');
  const tools = { calculator: aiTool({ description: 'Evaluate', inputSchema: calculatorArgs, execute: async ({ expression }) => add(expression) }) };
  let tasks = 0;
  return {
    name: 'Vercel AI SDK, streamText, each step saved to SQLite',
    async task(steps) {
      const task = String(++tasks);
      let step = 0;
      const result = streamText({
        model,
        prompt: PROMPT,
        tools,
        stopWhen: stepCountIs(steps + 2),
        maxRetries: 0,
        onStepFinish: ({ response }) => journal.commit(task, ++step, response.messages),
      });
      for await (const _part of result.fullStream);
      return (await result.steps).length;
    },
    stop: notMeasured,
    async close() {
      journal.close();
    },
  };
}

/** An Agents SDK session in SQLite: each addItems one transaction (the items in order). */
class SqliteSession implements Session {
  private seq = 0;
  constructor(
    private readonly journal: ReturnType<typeof sqliteJournal>,
    private readonly id: string,
  ) {}
  async getSessionId() {
    return this.id;
  }
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const rows = this.journal.db.prepare('select entry from journal where run = ? order by seq').all([this.id]) as { entry: string }[];
    const items = rows.flatMap((row) => JSON.parse(row.entry) as AgentInputItem[]);
    return limit === undefined ? items : items.slice(-limit);
  }
  async addItems(items: AgentInputItem[]) {
    if (items.length) this.journal.commit(this.id, ++this.seq, items);
  }
  async popItem() {
    return undefined;
  }
  async clearSession() {}
}

/** The Agents SDK, a streamed run with a SQLite-backed session (a session per task). */
export function openAiAgentsSqlite(baseURL: string): Framework {
  const journal = sqliteJournal();
  const agent = calculatorAgent(baseURL);
  let tasks = 0;
  return {
    name: 'OpenAI Agents SDK, streamed, SQLite session',
    async task(steps) {
      const session = new SqliteSession(journal, `task-${++tasks}`);
      const result = await runAgent(agent, PROMPT, { stream: true, session, maxTurns: steps + 5 });
      for await (const _event of result);
      await result.completed;
      return result.rawResponses.length;
    },
    stop: notMeasured,
    async close() {
      journal.close();
    },
  };
}
