import { isAbortError } from '../errors.ts';
import type { LlmMessage, LlmToolCall } from '../llm/llm-client.ts';
import { REQUEST_INPUT_TOOL } from '../tools/request-input-tool.ts';
import type { RunContext, RunInput } from './strategy.ts';

/** One finished tool call: what the model reads back, and a line for the observe prompt. */
export interface ToolCallRecord {
  call: LlmToolCall;
  content: string;
  summary: string;
}

const SUMMARY_MAX_CHARS = 2_000;

/**
 * Runs the tool calls of one act phase. Ordinary tools run in parallel (they are independent by
 * construction: the model issued them together); `request_input` questions are asked one at a
 * time. Results come back in the model's order. Rejects on stop and on input timeout.
 */
export async function runToolCalls(
  calls: LlmToolCall[],
  step: number,
  input: RunInput,
  context: RunContext,
): Promise<ToolCallRecord[]> {
  const enabled = new Set(input.toolNames);
  const ordinary = calls.filter((call) => call.name !== REQUEST_INPUT_TOOL);
  const settled = await Promise.allSettled(ordinary.map((call) => runOrdinary(call, step, enabled, input, context)));
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
  const records = new Map<LlmToolCall, ToolCallRecord>();
  settled.forEach((result, index) => {
    if (result.status === 'fulfilled') records.set(ordinary[index]!, result.value);
  });
  for (const call of calls) {
    if (call.name === REQUEST_INPUT_TOOL) records.set(call, await askUser(call, step, context));
  }
  return calls.map((call) => records.get(call)!);
}

/** The assistant's tool-call message followed by each call's result, as the model expects them. */
export function toolCallMessages(text: string, records: ToolCallRecord[]): LlmMessage[] {
  return [
    { role: 'assistant', content: text || null, toolCalls: records.map((record) => record.call) },
    ...records.map((record): LlmMessage => ({ role: 'tool', toolCallId: record.call.id, content: record.content })),
  ];
}

async function runOrdinary(
  call: LlmToolCall,
  step: number,
  enabled: ReadonlySet<string>,
  input: RunInput,
  context: RunContext,
): Promise<ToolCallRecord> {
  const { events, sink, tools, control } = context;
  let args: Record<string, unknown>;
  try {
    args = tools.parseArguments(call.arguments);
  } catch {
    args = { raw: call.arguments };
  }
  await sink.emit(events.toolStart(step, call.id, call.name, args));
  const outcome = await tools.execute(call, enabled, {
    signal: control.signal,
    sessionId: input.sessionId,
    runId: input.runId,
  });
  if (outcome.ok) {
    await sink.emit(events.toolComplete(step, call.id, call.name, outcome.result, outcome.durationMs));
  } else {
    await sink.emit(events.toolError(step, call.id, call.name, outcome.error, outcome.durationMs));
  }
  return { call, content: outcome.content, summary: summarize(`${call.name}(${JSON.stringify(args)})`, outcome.content) };
}

/** The virtual request_input tool: show the question, wait for the answer, return it as the result. */
async function askUser(call: LlmToolCall, step: number, context: RunContext): Promise<ToolCallRecord> {
  const { events, sink, control, inputTimeoutMs } = context;
  let question = '';
  try {
    const args = context.tools.parseArguments(call.arguments);
    question = typeof args.question === 'string' ? args.question.trim() : '';
  } catch {
    // Handled below: a question we cannot read is reported to the model.
  }
  if (!question) {
    const error = 'request_input needs a non-empty "question" string';
    await sink.emit(events.toolStart(step, call.id, call.name, { raw: call.arguments }));
    await sink.emit(events.toolError(step, call.id, call.name, error, 0));
    return { call, content: `Error: ${error}`, summary: summarize(REQUEST_INPUT_TOOL, `Error: ${error}`) };
  }
  const started = performance.now();
  await sink.emit(events.toolStart(step, call.id, call.name, { question }));
  await sink.emit(events.requestInput(step, question, call.id, new Date(Date.now() + inputTimeoutMs)));
  let answer: string;
  try {
    answer = await control.waitForInput(inputTimeoutMs, control.signal);
  } catch (error) {
    if (!isAbortError(error, control.signal)) await sink.emit(events.requestInputTimeout(step));
    throw error;
  }
  await sink.emit(events.toolComplete(step, call.id, call.name, answer, Math.round(performance.now() - started)));
  return { call, content: answer, summary: summarize(`asked the user "${question}"`, `the user answered: ${answer}`) };
}

function summarize(what: string, result: string): string {
  const line = `- ${what} → ${result}`;
  return line.length > SUMMARY_MAX_CHARS ? `${line.slice(0, SUMMARY_MAX_CHARS)}…` : line;
}
