// The reproductions of the security round on the research document, model output and snapshots,
// run again against a real server: for each, how long the health check took at the worst while
// it ran (asked every 20 ms), the server's peak memory, and what became of the attack.
//   node scripts/build-server.mjs && node --import tsx bench/src/attacks.ts
import WebSocket from 'ws';
import { observeText, ScriptedLlmServer, type ScriptedReply } from '../../tests/fixtures/scripted-llm-server.ts';
import { peakRss } from './processes.ts';
import { startStepwise } from './stepwise-server.ts';

type Event = Record<string, unknown>;

const model = await ScriptedLlmServer.start();
let reply: (purpose: string, node: string | undefined) => ScriptedReply = () => ({ text: 'ok' });
model.respond((request) => reply(request.purpose, request.node));
const server = await startStepwise(model.url, { env: { LOG_LEVEL: 'warn' } });

/** One session over a socket: its events, and a way to wait for one. */
async function session() {
  const socket = new WebSocket(server.wsUrl);
  const events: Event[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (data) => {
    events.push(JSON.parse(data.toString()) as Event);
    for (const waiter of [...waiters]) waiter();
  });
  const until = (find: (event: Event) => boolean, from = 0) =>
    new Promise<Event>((resolve) => {
      const check = () => {
        const found = events.slice(from).find(find);
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  const { session_id: id } = (await until((event) => event.type === 'session')) as { session_id: string };
  socket.send(JSON.stringify({ type: 'todos_set', todos: [] }));
  await until((event) => event.update_type === 'agent_todos');
  return { id, socket, events, until };
}

/** Runs `attack` while asking /api/health every 20 ms; prints the worst answer time and the peak memory so far. */
async function measure(name: string, attack: () => Promise<string>): Promise<void> {
  let worst = 0;
  let running = true;
  const probe = (async () => {
    while (running) {
      const started = performance.now();
      await fetch(`${server.url}/api/health`);
      worst = Math.max(worst, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const outcome = await attack();
  running = false;
  await probe;
  console.log(`${name}: health at worst ${worst.toFixed(0)} ms, peak RSS ${(peakRss(server.pid) / 2 ** 20).toFixed(0)} MB; ${outcome}`);
}

const upload = async (id: string, name: string, body: string) => {
  const response = await fetch(`${server.url}/api/sessions/${id}/files?name=${encodeURIComponent(name)}`, { method: 'POST', body });
  return `${response.status} ${((await response.json()) as { error?: { code: string } }).error?.code ?? 'saved'}`;
};

const anchored = (items: number, names: number) =>
  `# Research state\n\n## Problem spec\n\nx\n\n## Current best answer\n\n(none yet)\n\n## Task graph\n\n\`\`\`yaml TASK_GRAPH_V2\nversion: 1\nbig: &big\n${Array.from({ length: items }, (_, index) => `  - i${index}`).join('\n')}\nstages:\n  - id: "1"\n    name: S\n    tasks:\n${Array.from({ length: names }, (_, index) => `      - {id: "1.${index + 1}", title: T, agent: verifier, inputs: *big}`).join('\n')}\n\`\`\`\n`;

const { id, socket, events, until } = await session();
await measure('1. 208 KB document, one anchored 20k-item list named 99 times', async () => upload(id, 'RESEARCH_STATE.md', anchored(20_000, 99)));
await measure('1. the same (a 5k-item list, under the model output cap) through write_file of a run', async () => {
  reply = (purpose) => {
    if (purpose === 'roa.act') return { toolCalls: [{ name: 'write_file', arguments: { name: 'RESEARCH_STATE.md', content: anchored(5_000, 99) } }] };
    return purpose === 'roa.observe' ? { text: observeText('Done.', { should_continue: false, final_answer: 'done' }) } : { text: 'Write the file.' };
  };
  const from = events.length;
  socket.send(JSON.stringify({ type: 'chat', content: 'write it', agent_mode: true, agent_max_steps: 1, tools: ['write_file'] }));
  await until((event) => event.type === 'response_complete', from);
  const error = events.slice(from).find((event) => event.type === 'tool_error');
  return error
    ? `tool_error: ${String(error.error).slice(0, 80)}`
    : `not refused: ${events
        .slice(from)
        .map((event) => event.update_type ?? event.type)
        .join(' ')}`;
});
await measure('2. a 9.5 MB document', async () => upload(id, 'RESEARCH_STATE.md', anchored(0, 1) + 'x'.repeat(9.5 * 2 ** 20)));
await measure('3. a 100k-character reply of nested braces to research.plan (and to its re-ask)', async () => {
  reply = () => ({ text: '{'.repeat(50_000) + '}'.repeat(50_000) });
  const from = events.length;
  socket.send(JSON.stringify({ type: 'chat', content: 'Research this', agent_mode: true, strategy: 'research' }));
  const ending = await until((event) => ['agent_error', 'agent_completion', 'agent_stopped'].includes(String(event.update_type)), from);
  await until((event) => event.type === 'response_complete', from);
  return `${String(ending.update_type)}: ${String(ending.message ?? ending.reason).slice(0, 80)}`;
});
await measure('8. 300 snapshot saves from one socket, one after the other', async () => {
  let saved = 0;
  for (let index = 0; index < 300; index++) {
    const from = events.length;
    socket.send(JSON.stringify({ type: 'snapshot_save', label: `s${index}` }));
    const answer = await until((event) => event.type === 'snapshot_saved' || event.type === 'error', from);
    if (answer.type === 'snapshot_saved') saved++;
  }
  return `${saved} saved, ${300 - saved} refused`;
});

socket.close();
await server.stop();
await model.close();
process.exit(0);
