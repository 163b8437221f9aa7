// The scripted OpenAI-compatible model server of the tests, in a process of its own, behaving as
// the benchmarks need. Prints its URL on stdout as JSON. Settings come from the environment:
//   BENCH_STEPS      tool steps per task (default 3)
//   BENCH_LATENCY_MS time before each reply (default 0)
//   BENCH_MODE       'task' (default), 'slow' (every reply takes 10 s), 'stream' (BENCH_TOKENS tokens, fast),
//                    'cluster' (as 'task', but a conversation whose last user message starts with "stop-"
//                    is answered as in 'slow': one model server for both halves of the several-instances section)
// In 'task' mode a conversation whose last user message starts with "lockstep" gets a stamped
// text reply each call (the bare-SDK side of the concurrency benchmark).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { observeText, reasonText, ScriptedLlmServer, type RecordedRequest, type ScriptedReply } from '../../tests/fixtures/scripted-llm-server.ts';

const steps = Number(process.env.BENCH_STEPS ?? 3);
const latency = Number(process.env.BENCH_LATENCY_MS ?? 0);
const mode = process.env.BENCH_MODE ?? 'task';
const tokens = Number(process.env.BENCH_TOKENS ?? 20_000);
const streamText = 'tok '.repeat(tokens);

/** What the model says next in the K-step calculator task, for Stepwise's phases and for a plain tool loop. */
function taskReply(request: RecordedRequest): ScriptedReply {
  const delayMs = latency || undefined;
  if (request.phase === 'chat' && markerOf(request).startsWith('lockstep')) return { text: 'Lockstep {{sent_at}}', stampSentAt: true, delayMs };
  const messages = request.body.messages;
  const toolResults = messages.filter((message) => message.role === 'tool').length;
  const calculator = { toolCalls: [{ name: 'calculator', arguments: { expression: `${toolResults}+1` } }], delayMs };
  // The plain tool loop's replies carry a few words of text, so that streamed they come in as many
  // chunks per call as Stepwise's phases do (about 11 with the usage chunk: see section 1's table).
  const toolReply = { ...calculator, text: 'Adding one with the calculator.' };
  switch (request.phase) {
    case 'reason':
      return { text: reasonText('Add one with the calculator. {{sent_at}}'), stampSentAt: true, delayMs };
    case 'act':
      return calculator;
    case 'observe': {
      const step = Number(/OBSERVE phase of step (\d+)/.exec(messages[0]?.content ?? '')?.[1] ?? 1);
      return step >= steps
        ? { text: observeText('Done {{sent_at}}', { should_continue: false, final_answer: `Counted to ${toolResults}.` }), stampSentAt: true, delayMs }
        : { text: observeText('Next {{sent_at}}'), stampSentAt: true, delayMs };
    }
    case 'chat':
      if (request.toolNames.length === 0) return { text: streamText, chunkChars: 4 };
      return toolResults < steps ? toolReply : { text: `Counted to ${toolResults} with the calculator, one step.`, delayMs };
    default:
      return { text: 'ok' };
  }
}

/** The last user message's text: frameworks send it as a string or as text parts. */
function markerOf(request: RecordedRequest): string {
  const content: unknown = request.body.messages.filter((message) => message.role === 'user').at(-1)?.content;
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((part: { text?: string }) => part.text ?? '').join('') : '';
}

/** Requests of the stop benchmark by their marker (the last user message), to report when each was closed. */
const watched = new Map<string, RecordedRequest>();

/**
 * Sizes of the request bodies received since the stats port was last asked (GET /bodies), and the
 * streamed chunks (`data:` events, the closing [DONE] left out) sent in reply.
 */
const bodies = { requests: 0, bytes: 0, maxBytes: 0, chunks: 0 };

const server = await ScriptedLlmServer.start();
// The fixture keeps its HTTP server to itself; its request headers are all the tally needs
// (every client here sends a Content-Length), so nothing is parsed twice. Should the fixture
// change shape, the sizes are simply not reported.
(server as unknown as { server?: Server }).server?.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
  const length = Number(request.headers['content-length'] ?? 0);
  bodies.requests++;
  bodies.bytes += length;
  bodies.maxBytes = Math.max(bodies.maxBytes, length);
  const write = response.write.bind(response) as (chunk: unknown, ...rest: unknown[]) => boolean;
  response.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && chunk.startsWith('data: {')) bodies.chunks++;
    return write(chunk, ...rest);
  }) as typeof response.write;
});
server.respond((request) => {
  // Keep no history: the benchmarks send hundreds of thousands of requests.
  server.requests.length = 0;
  if (mode === 'slow' || (mode === 'cluster' && markerOf(request).startsWith('stop-'))) {
    watched.set(markerOf(request), request);
    return { text: 'late', delayMs: 10_000 };
  }
  if (mode === 'stream') return { text: streamText, chunkChars: 4 };
  return taskReply(request);
});
// On the stats port, GET /received?marker=… and /closed?marker=…: when the request with that marker
// arrived, and when it was closed (/closed forgets it); GET /bodies: the request bodies' sizes since
// the last time it was asked.
const stats = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://x');
  response.setHeader('content-type', 'application/json');
  if (url.pathname === '/bodies') {
    response.end(JSON.stringify(bodies));
    Object.assign(bodies, { requests: 0, bytes: 0, maxBytes: 0, chunks: 0 });
    return;
  }
  const marker = url.searchParams.get('marker') ?? '';
  const recorded = watched.get(marker);
  if (url.pathname === '/closed' && recorded?.aborted) watched.delete(marker);
  response.end(JSON.stringify(recorded ? { receivedAt: recorded.receivedAt, closedAt: recorded.abortedAt ?? null } : {}));
});
stats.listen(0, '127.0.0.1');
await once(stats, 'listening');
process.stdout.write(`${JSON.stringify({ url: server.url, stats: `http://127.0.0.1:${(stats.address() as AddressInfo).port}` })}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
