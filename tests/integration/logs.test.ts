import { Writable } from 'node:stream';
import { configFromEnv, startServer } from '@stepwise/backend';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { answerAfter, observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { sharedTestStore } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';

const SECRET_KEY = 'sk-very-secret-api-key-1234';
const TOKEN = 'auth-token-abcdefghijklmnop';
const PRIVATE = 'my-private-question-7f3a';

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => cleanup?.());

/** A stream for a logger, and the lines written to it. */
function logLines(): { raw: string[]; stream: Writable } {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { raw, stream };
}

describe('logs', () => {
  it('say each model call at debug and each run at info, in structured lines with no message contents and no secrets', async () => {
    const llm = await ScriptedLlmServer.start();
    const { raw, stream } = logLines();
    const config = configFromEnv({ PORT: '0', LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: SECRET_KEY, AUTH_TOKEN: TOKEN });
    const server = await startServer({ config, logger: pino({ level: 'debug' }, stream), store: await sharedTestStore() });
    cleanup = async () => {
      await server.close();
      await llm.close();
    };
    const wsUrl = `${server.url.replace(/^http/, 'ws')}/ws`;
    await fetch(`${server.url}/api/sessions`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });

    llm.enqueue(...answerAfter(`Thinking about ${PRIVATE}.`, [{ name: 'calculator', arguments: { expression: '1+1' } }], 'Two.', `Answer for ${PRIVATE}`));
    const client = await TestClient.connect(wsUrl, {}, { headers: { authorization: `Bearer ${TOKEN}` } });
    client.chat(`Question: ${PRIVATE}`, { agent_mode: true });
    await client.untilComplete();
    await client.close();

    const lines = raw.map((line) => JSON.parse(line) as Record<string, unknown>);
    const runId = client.logged[0]!.run_id;
    const sessionId = client.session.session_id;
    const phases = lines.filter((line) => line.msg === 'model call done');
    expect(phases.map((line) => line.purpose)).toEqual(['roa.reason', 'roa.act', 'roa.observe']);
    expect(phases.every((line) => line.level === 20)).toBe(true);
    // At info, a run is one line: how it ended.
    const runLines = lines.filter((line) => line.level === 30 && line.run_id === client.logged[0]!.run_id);
    expect(runLines.map((line) => line.msg)).toEqual(['run ended']);
    for (const line of [...phases, ...lines.filter((line) => line.msg === 'tool done' || line.msg === 'run ended')]) {
      expect(line).toMatchObject({ session_id: sessionId, run_id: runId });
    }
    const everything = raw.join('\n');
    expect(everything).not.toContain(PRIVATE);
    expect(everything).not.toContain(SECRET_KEY);
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain('wrong-token-wrong-token');
  });

  it('with tracing on, name the trace of the run they are about, and the span of the model call they are written in', async () => {
    const llm = await ScriptedLlmServer.start();
    const { raw, stream } = logLines();
    // No collector listens there: the spans are dropped, the log lines are what is looked at.
    const config = configFromEnv({
      PORT: '0',
      LLM_PROVIDER: 'openai',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: SECRET_KEY,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    });
    const server = await startServer({ config, logger: pino({ level: 'debug' }, stream), store: await sharedTestStore() });
    cleanup = async () => {
      await server.close();
      await llm.close();
    };
    llm.enqueue({ text: reasonText('Nothing to do.', { finish: true }) }, { text: observeText('Done.', { final_answer: 'Hello.' }) });
    const client = await TestClient.connect(`${server.url.replace(/^http/, 'ws')}/ws`);
    client.chat('Hello', { agent_mode: true });
    await client.untilComplete();
    await client.close();

    const lines = raw.map((line) => JSON.parse(line) as Record<string, unknown>);
    const runId = client.logged[0]!.run_id as string;
    const traceId = runId.replaceAll('-', '');
    expect(lines.find((line) => line.msg === 'run ended')).toMatchObject({ run_id: runId, trace_id: traceId });
    const calls = lines.filter((line) => line.msg === 'model call');
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call).toMatchObject({ trace_id: traceId, span_id: expect.stringMatching(/^[0-9a-f]{16}$/), trace_flags: '01' });
    expect(new Set(calls.map((call) => call.span_id)).size).toBe(2);
  });
});
