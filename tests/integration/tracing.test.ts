import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { scriptCalculatorRun } from '../helpers/calculating-model.ts';
import { startStepwise, startStepwiseWithModel, type TestServer } from '../helpers/stepwise.ts';
import { TestClient } from '../helpers/ws-client.ts';
import { Waiters } from '../helpers/waiters.ts';

/** A span as an OTLP/JSON export carries it, its attributes flattened. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  status?: { code?: number };
  links?: { traceId: string; spanId: string }[];
}

type OtlpAttributes = { key: string; value: Record<string, unknown> }[];
/** A metric as an OTLP/JSON export carries it (histograms only, here). */
type ExportedMetric = { name: string; unit: string; histogram?: { dataPoints: { attributes: OtlpAttributes; sum: number; count: number | string }[] } };
/** OTLP/JSON attributes as a plain object (an array value as its values). */
const flat = (attributes: OtlpAttributes) =>
  Object.fromEntries(
    attributes.map(({ key, value }) => {
      const inner = Object.values(value)[0] as { values?: Record<string, unknown>[] } | unknown;
      const array = (inner as { values?: Record<string, unknown>[] } | undefined)?.values;
      return [key, Array.isArray(array) ? array.map((item) => Object.values(item)[0]) : inner];
    }),
  );

/** An OTLP/HTTP traces receiver on 127.0.0.1: records each export's content type and body. */
class TraceReceiver {
  readonly exports: { contentType: string; body: Buffer }[] = [];
  /** Metrics exports (OTLP/JSON bodies, parsed). */
  readonly metricExports: { resourceMetrics: { scopeMetrics: { metrics: ExportedMetric[] }[] }[] }[] = [];
  private readonly waiters = new Waiters();
  private constructor(private readonly server: Server) {}

  static async start(): Promise<TraceReceiver> {
    let receiver: TraceReceiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/v1/traces') receiver!.exports.push({ contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
        if (request.url === '/v1/metrics' && request.headers['content-type']?.includes('json'))
          receiver!.metricExports.push(JSON.parse(Buffer.concat(chunks).toString()));
        response
          .writeHead(200, { 'content-type': request.headers['content-type'] ?? 'application/json' })
          .end(request.headers['content-type']?.includes('json') ? '{}' : '');
        receiver!.waiters.notify();
      });
    });
    receiver = new TraceReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every span received so far (OTLP/JSON exports), each with its resource's attributes. */
  spans(): (ExportedSpan & { resource: Record<string, unknown> })[] {
    return this.exports
      .filter((entry) => entry.contentType.includes('json'))
      .flatMap(
        (entry) =>
          (
            JSON.parse(entry.body.toString()) as {
              resourceSpans: {
                resource: { attributes: OtlpAttributes };
                scopeSpans: { spans: (ExportedSpan & { attributes: OtlpAttributes })[] }[];
              }[];
            }
          ).resourceSpans,
      )
      .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, resource: flat(resource.resource.attributes) }))))
      .map((span) => ({ ...span, attributes: flat(span.attributes as unknown as OtlpAttributes) }));
  }

  /** Every histogram data point received so far, by metric name, its attributes flattened. */
  metrics(): { name: string; unit: string; attributes: Record<string, unknown>; sum: number; count: number }[] {
    return this.metricExports
      .flatMap((entry) => entry.resourceMetrics.flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics)))
      .flatMap((metric) =>
        (metric.histogram?.dataPoints ?? []).map((point) => ({
          name: metric.name,
          unit: metric.unit,
          attributes: flat(point.attributes),
          sum: point.sum,
          count: Number(point.count),
        })),
      );
  }

  /** Waits until `find` returns something, asked again at each export. */
  until<T>(find: () => T | undefined, timeoutMs = 30_000): Promise<T> {
    const names = () =>
      this.spans()
        .map((span) => span.name)
        .join(', ');
    return this.waiters.until(find, timeoutMs, () => new Error(`No such export after ${timeoutMs} ms; spans so far: ${names()}`));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let server: TestServer | undefined;
let llm: ScriptedLlmServer | undefined;
let receiver: TraceReceiver | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.terminate();
  await server?.close();
  server = undefined;
  await llm?.close();
  llm = undefined;
  await receiver?.close();
  receiver = undefined;
});

async function connect(): Promise<TestClient> {
  const client = await TestClient.connect(server!.wsUrl);
  clients.push(client);
  return client;
}

/** A model that has the calculator compute 6*7, then answers. */
async function calculatingModel(): Promise<ScriptedLlmServer> {
  const model = await ScriptedLlmServer.start();
  scriptCalculatorRun(model);
  return model;
}

const tracingEnv = (protocol: string, extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_BSP_SCHEDULE_DELAY: '20',
  LLM_MODEL: 'gpt-test',
  ...extra,
});

describe('OpenTelemetry traces (OTLP over HTTP)', () => {
  it('a run is an invoke_agent span with its model calls and tool call under it, in the trace agent_start names', async () => {
    receiver = await TraceReceiver.start();
    llm = await calculatingModel();
    server = await startStepwiseWithModel(
      llm.url,
      tracingEnv('http/json', {
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,team=agents',
        INSTANCE_ID: 'instance-7',
        OTEL_METRIC_EXPORT_INTERVAL: '50',
      }),
    );
    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    const start = await client.waitFor('agent_start');
    await client.untilComplete({ timeoutMs: 30_000 });
    const traceId = start.trace_id as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).toBe((start.run_id as string).replaceAll('-', ''));

    const run = await receiver.until(() => receiver!.spans().find((span) => span.name === 'invoke_agent roa'));
    const calls = await receiver.until(() => {
      const found = receiver!.spans().filter((span) => span.name === 'chat gpt-test');
      return found.length === 3 ? found : undefined;
    });
    const tool = await receiver.until(() => receiver!.spans().find((span) => span.name === 'execute_tool calculator'));

    expect(run.traceId).toBe(traceId);
    expect(run.parentSpanId ?? '').toBe('');
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'roa',
      'gen_ai.conversation.id': client.session.session_id,
      'stepwise.run_id': start.run_id,
      'stepwise.ending': 'answered',
    });
    for (const call of calls) {
      expect(call.traceId).toBe(traceId);
      expect(call.parentSpanId).toBe(run.spanId);
      expect(call.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-test',
        // What the response itself says: the scripted server names its model "scripted".
        'gen_ai.response.model': 'scripted',
        'gen_ai.response.id': expect.stringMatching(/^chatcmpl-/),
        'gen_ai.response.finish_reasons': [expect.any(String)],
      });
      expect(call.resource).toMatchObject({
        'service.name': 'stepwise',
        'service.version': expect.any(String),
        'service.instance.id': 'instance-7',
        'deployment.environment.name': 'test',
        team: 'agents',
      });
      // The model server saw the call's span as its caller.
      const request = llm.requests.find((seen) => seen.headers.traceparent?.includes(call.spanId));
      expect(request?.headers.traceparent).toBe(`00-${traceId}-${call.spanId}-01`);
      // Message content stays out unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is on.
      expect(call.attributes['gen_ai.input.messages']).toBeUndefined();
    }
    expect(calls.map((call) => call.attributes['stepwise.purpose']).sort()).toEqual(['roa.act', 'roa.observe', 'roa.reason']);
    const act = calls.find((call) => call.attributes['stepwise.purpose'] === 'roa.act')!;
    expect(act.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': expect.anything(), 'gen_ai.usage.output_tokens': expect.anything() });
    expect(Number(act.attributes['gen_ai.usage.input_tokens'])).toBe(100);
    expect(tool.parentSpanId).toBe(run.spanId);
    // The GenAI client metrics: each call's duration, and its input and output tokens.
    const called = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.response.model': 'scripted',
    };
    const durations = await receiver.until(() => {
      const found = receiver!.metrics().filter((point) => point.name === 'gen_ai.client.operation.duration');
      return found.some((point) => point.count >= 3) ? found : undefined;
    });
    expect(durations.at(-1)).toMatchObject({ unit: 's', attributes: called });
    const tokens = receiver.metrics().filter((point) => point.name === 'gen_ai.client.token.usage');
    const input = tokens.findLast((point) => point.attributes['gen_ai.token.type'] === 'input');
    expect(input).toMatchObject({ unit: '{token}', attributes: { ...called, 'gen_ai.token.type': 'input' }, count: 3, sum: 120 });
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'calculator',
      'gen_ai.tool.call.id': expect.any(String),
    });
  });

  it('captures prompts and replies only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', async () => {
    receiver = await TraceReceiver.start();
    llm = await calculatingModel();
    server = await startStepwiseWithModel(llm.url, tracingEnv('http/json', { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }));
    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    await client.untilComplete({ timeoutMs: 30_000 });
    const observe = await receiver.until(() => receiver!.spans().find((span) => span.attributes['stepwise.purpose'] === 'roa.observe'));
    expect(String(observe.attributes['gen_ai.input.messages'])).toContain('6*7');
    expect(String(observe.attributes['gen_ai.output.messages'])).toContain('It is 42.');
  });

  it('exports protobuf by default (http/protobuf)', async () => {
    receiver = await TraceReceiver.start();
    llm = await calculatingModel();
    server = await startStepwiseWithModel(llm.url, tracingEnv('http/protobuf'));
    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    await client.untilComplete({ timeoutMs: 30_000 });
    const exported = await receiver.until(() => receiver!.exports.find((entry) => entry.body.includes('invoke_agent roa')));
    expect(exported.contentType).toBe('application/x-protobuf');
  });

  it('names the span of a tool call whose name no tool has execute_tool other, keeping the name as called (cut short) as an attribute', async () => {
    receiver = await TraceReceiver.start();
    llm = await ScriptedLlmServer.start();
    const invented = `made_up_${'x'.repeat(2_000)}`;
    llm.respond((request) => {
      if (request.phase === 'act') {
        const done = request.body.messages.some((message) => message.role === 'tool');
        return done ? { text: 'No more tools.' } : { toolCalls: [{ name: invented, arguments: {} }] };
      }
      if (request.phase === 'observe') return { text: observeText('Done.', { should_continue: false, final_answer: 'none' }) };
      return { text: reasonText('Call it.') };
    });
    server = await startStepwiseWithModel(llm.url, tracingEnv('http/json'));
    const client = await connect();
    client.chat('Call a tool nobody has', { agent_mode: true });
    await client.untilComplete({ timeoutMs: 30_000 });
    const tool = await receiver.until(() => receiver!.spans().find((span) => span.attributes['gen_ai.operation.name'] === 'execute_tool'));
    expect(tool.name).toBe('execute_tool other');
    expect(tool.attributes['gen_ai.tool.name']).toBe(invented.slice(0, 200));
  });

  it('links a run to the caller’s traceparent, sent on an AG-UI or A2A request', async () => {
    receiver = await TraceReceiver.start();
    server = await startStepwise(tracingEnv('http/json'));
    const callerTrace = (n: number) => ({ traceId: `${n}`.repeat(32).slice(0, 32), spanId: `${n}`.repeat(16).slice(0, 16) });
    const traceparent = ({ traceId, spanId }: { traceId: string; spanId: string }) => `00-${traceId}-${spanId}-01`;
    const agUi = await fetch(`${server.url}/api/ag-ui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', traceparent: traceparent(callerTrace(1)) },
      body: JSON.stringify({ threadId: randomUUID(), runId: 'r1', messages: [{ id: '1', role: 'user', content: 'What is 6*7?' }] }),
    });
    expect(await agUi.text()).toContain('RUN_FINISHED');
    const a2a = await fetch(`${server.url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: traceparent(callerTrace(2)) },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text: 'What is 2+3?' }] } },
      }),
    });
    expect(((await a2a.json()) as { result: { status: { state: string } } }).result.status.state).toBe('completed');
    for (const caller of [callerTrace(1), callerTrace(2)]) {
      const run = await receiver.until(() =>
        receiver!.spans().find((span) => span.name.startsWith('invoke_agent') && (span.links ?? []).some((link) => link.traceId === caller.traceId)),
      );
      // The run keeps its own trace; the caller's span is a link.
      expect(run.traceId).not.toBe(caller.traceId);
      expect(run.links).toEqual([expect.objectContaining({ traceId: caller.traceId, spanId: caller.spanId })]);
    }
  });

  it('puts a plan step’s model calls under its plan_step span', async () => {
    receiver = await TraceReceiver.start();
    server = await startStepwise(tracingEnv('http/json'));
    const client = await connect();
    client.chat('What is (17+25)*3?', { agent_mode: true, strategy: 'plan_execute' });
    await client.untilComplete({ timeoutMs: 30_000 });
    const step = await receiver.until(() => receiver!.spans().find((span) => span.name.startsWith('plan_step ')));
    const inStep = await receiver.until(() => receiver!.spans().find((span) => span.name.startsWith('chat ') && span.parentSpanId === step.spanId));
    expect(inStep.attributes['gen_ai.provider.name']).toBe('stepwise.demo');
    const run = await receiver.until(() => receiver!.spans().find((span) => span.name === 'invoke_agent plan_execute'));
    expect(step.parentSpanId).toBe(run.spanId);
  });

  it('takes its sampler and propagators from OTEL_TRACES_SAMPLER and OTEL_PROPAGATORS, as the SDK reads them', async () => {
    receiver = await TraceReceiver.start();
    llm = await calculatingModel();
    server = await startStepwiseWithModel(llm.url, tracingEnv('http/json', { OTEL_PROPAGATORS: 'b3', OTEL_TRACES_SAMPLER: 'always_off' }));
    const client = await connect();
    client.chat('What is 6*7?', { agent_mode: true, tools: ['calculator'] });
    const start = await client.waitFor('agent_start');
    await client.untilComplete({ timeoutMs: 30_000 });
    expect(llm.requests.length).toBeGreaterThan(0);
    for (const request of llm.requests) {
      // A B3 single header instead of traceparent, in the run's trace, saying "not sampled" (always_off).
      expect(request.headers.traceparent).toBeUndefined();
      expect(request.headers.b3).toMatch(new RegExp(`^${start.trace_id as string}-[0-9a-f]{16}-0$`));
    }
  });
});
