// Tool approval over real sockets: a tool whose policy is "ask" waits for a person, who approves
// (arguments edited or not), denies (the model reads why) or lets it be remembered for the run;
// a stop says what became of each call of its step; a cost budget ends a run before it is passed.
import { mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVERYTHING_STDIO, writeMcpConfig } from '../fixtures/mcp-servers.ts';
import { answerAfter, observeText, reasonText } from '../fixtures/scripted-llm-server.ts';
import { askToWriteHello, writesHello } from '../helpers/approvals.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize } from '../helpers/ws-client.ts';

type Event = Record<string, unknown>;

const stepwise = useScriptedStepwise({ LLM_MODEL: 'gpt-4o-mini' });
let dataDir: string | undefined;

function start(env: Record<string, string> = {}) {
  dataDir = mkdtempSync(join(tmpdir(), 'stepwise-approval-'));
  return stepwise.start({ DATA_DIR: dataDir, ...env });
}

const fileOf = (name: string) => readFile(join(dataDir!, 'files', String(stepwise.client.session.session_id), name), 'utf8').catch(() => undefined);
const toolResults = (request: { body: { messages: Array<{ role: string; content?: unknown; tool_call_id?: string }> } }) =>
  request.body.messages.filter((message) => message.role === 'tool').map((message) => String(message.content));

describe('tool approval', () => {
  it('write_file asks first; a denial reaches the model as the tool result, and nothing is written', async () => {
    const { llm, client } = await start();
    llm.enqueue(...writesHello('Denied.', 'I did not write the file.'));
    const approval = await askToWriteHello(client);
    expect(approval).toMatchObject({
      kind: 'approval',
      tool_call_id: 'w1',
      tool: 'write_file',
      arguments: { name: 'out.txt', content: 'hello' },
      choices: ['Approve', 'Deny'],
      question_id: expect.any(String),
      deadline: expect.any(String),
    });
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'deny', reason: 'not today' } });
    const events = (await client.untilComplete()) as Event[];
    expect(events.find((event) => event.type === 'tool_error')).toMatchObject({ tool_name: 'write_file', error: 'The person denied this call: not today' });
    expect(toolResults(llm.requests.find((request) => request.phase === 'observe')!)).toEqual(['The person denied this call: not today']);
    expect(await fileOf('out.txt')).toBeUndefined();
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });

  it('approve with edited arguments runs the tool with them; arguments that break its schema are refused and the question stays open', async () => {
    const { llm, client } = await start();
    llm.enqueue(...writesHello('Written.', 'Done.'));
    const approval = await askToWriteHello(client);
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve', arguments: { name: 42 } } });
    const refused = await client.waitFor('error');
    expect(refused).toMatchObject({ code: 'invalid_arguments', message: expect.stringMatching(/name/) });
    client.send({
      type: 'agent_user_input',
      question_id: approval.question_id,
      approval: { decision: 'approve', arguments: { name: 'edited.txt', content: 'edited by a person' } },
    });
    const events = (await client.untilComplete()) as Event[];
    expect(events.find((event) => event.type === 'tool_complete')).toMatchObject({ tool_name: 'write_file' });
    expect(await fileOf('edited.txt')).toBe('edited by a person');
    expect(await fileOf('out.txt')).toBeUndefined();
    expect(toolResults(llm.requests.find((request) => request.phase === 'observe')!)[0]).toMatch(/edited\.txt/);
  });

  it('two parallel calls each ask; answered out of order, each gets its own answer; "remember" spares the run the next question', async () => {
    const { llm, client } = await start();
    llm.enqueue(
      { text: reasonText('Two files.') },
      {
        toolCalls: [
          { id: 'a', name: 'write_file', arguments: { name: 'a.txt', content: 'A' } },
          { id: 'b', name: 'write_file', arguments: { name: 'b.txt', content: 'B' } },
        ],
      },
      { text: observeText('One more.', { should_continue: true }) },
      { text: reasonText('Third file.') },
      { toolCalls: [{ id: 'c', name: 'write_file', arguments: { name: 'c.txt', content: 'C' } }] },
      { text: observeText('Done.', { final_answer: 'Done.' }) },
    );
    client.chat('Write three files', { agent_mode: true, agent_max_steps: 5 });
    const first = await client.waitFor('agent_request_input');
    const second = await client.waitFor('agent_request_input', { from: client.events.indexOf(first) + 1 });
    const byCall = new Map([first, second].map((question) => [question.tool_call_id, question.question_id]));
    client.send({ type: 'agent_user_input', question_id: byCall.get('b'), approval: { decision: 'approve', remember: 'run' } });
    client.send({ type: 'agent_user_input', question_id: byCall.get('a'), approval: { decision: 'deny' } });
    const events = (await client.untilComplete()) as Event[];
    expect(await fileOf('a.txt')).toBeUndefined();
    expect(await fileOf('b.txt')).toBe('B');
    // The third call of the remembered tool ran without a question.
    expect(await fileOf('c.txt')).toBe('C');
    expect(events.filter((event) => event.update_type === 'agent_request_input')).toHaveLength(2);
  });

  it('"remember for this run" does not carry over to a continued run: its new call of the tool asks again', async () => {
    const { llm, client } = await start();
    llm.enqueue(
      { text: reasonText('A file.') },
      { toolCalls: [{ id: 'a', name: 'write_file', arguments: { name: 'a.txt', content: 'A' } }] },
      { text: observeText('More to do.', { should_continue: true }) },
      { text: 'Out of steps.' },
    );
    client.chat('Write two files', { agent_mode: true, agent_max_steps: 1 });
    const asked = await client.waitFor('agent_request_input');
    client.send({ type: 'agent_user_input', question_id: asked.question_id, approval: { decision: 'approve', remember: 'run' } });
    const first = (await client.untilComplete()) as Event[];
    expect(first.find((event) => event.update_type === 'agent_completion')).toMatchObject({ reason: 'max_steps' });
    expect(await fileOf('a.txt')).toBe('A');

    llm.enqueue(...answerAfter('Second file.', [{ id: 'b', name: 'write_file', arguments: { name: 'b.txt', content: 'B' } }], 'Done.', 'Both written.'));
    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 1 });
    const again = await client.waitFor('agent_request_input', { from });
    expect(again).toMatchObject({ tool_call_id: 'b' });
    expect(await fileOf('b.txt')).toBeUndefined();
    client.send({ type: 'agent_user_input', question_id: again.question_id, approval: { decision: 'approve' } });
    await client.untilComplete({ from });
    expect(await fileOf('b.txt')).toBe('B');
  });

  it('a chat may set its own policies: auto for write_file, deny for the calculator (the model is told)', async () => {
    const { llm, client } = await start();
    llm.enqueue(
      { text: reasonText('Both.') },
      {
        toolCalls: [
          { id: 'w', name: 'write_file', arguments: { name: 'x.txt', content: 'x' } },
          { id: 'c', name: 'calculator', arguments: { expression: '1+1' } },
        ],
      },
      { text: observeText('Done.', { final_answer: 'Done.' }) },
    );
    client.chat('Go', { agent_mode: true, tool_approval: { write_file: 'auto', calculator: 'deny' } });
    const events = (await client.untilComplete()) as Event[];
    expect(events.some((event) => event.update_type === 'agent_request_input')).toBe(false);
    expect(await fileOf('x.txt')).toBe('x');
    expect(toolResults(llm.requests.find((request) => request.phase === 'observe')!)[1]).toMatch(/denies calculator/);
  });

  it('with APPROVAL_TIMEOUT_ACTION=deny, no answer by the deadline leaves the call unmade, the model told nobody answered, and the run goes on', async () => {
    const { llm, client } = await start({ AGENT_INPUT_TIMEOUT_MS: '300', APPROVAL_TIMEOUT_ACTION: 'deny' });
    llm.enqueue(
      ...answerAfter('Write it.', [{ id: 'w1', name: 'write_file', arguments: { name: 'late.txt', content: 'x' } }], 'No answer.', 'Nobody approved.'),
    );
    client.chat('Write late.txt', { agent_mode: true });
    const events = (await client.untilComplete({ timeoutMs: 30_000 })) as Event[];
    const told = 'Nobody answered the approval request in time; the call was not made.';
    expect(events.find((event) => event.type === 'tool_error')).toMatchObject({ error: told });
    expect(toolResults(llm.requests.find((request) => request.phase === 'observe')!)).toEqual([told]);
    expect(JSON.stringify(llm.requests.map((request) => request.body.messages))).not.toMatch(/person denied/);
    expect(await fileOf('late.txt')).toBeUndefined();
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });
});

describe('MCP tools ask unless their annotations say they only read', { timeout: 90_000 }, () => {
  it('a tool that is not read-only asks; a read-only one runs; the session lists each policy', async () => {
    // server-everything annotates its tools: echo is read-only, toggle-simulated-logging is not.
    const config = writeMcpConfig({ everything: EVERYTHING_STDIO });
    const { llm, client } = await start({ STEPWISE_CONFIG: config });
    const listed = new Map((client.session.tools as Array<{ name: string; approval?: string }>).map((tool) => [tool.name, tool.approval]));
    expect(listed.get('everything__echo')).toBe('auto');
    expect(listed.get('everything__toggle-simulated-logging')).toBe('ask');
    expect(listed.get('write_file')).toBe('ask');
    expect(listed.get('calculator')).toBe('auto');
    llm.enqueue(
      { text: reasonText('Echo, then toggle.') },
      {
        toolCalls: [
          { id: 'e', name: 'everything__echo', arguments: { message: 'hi' } },
          { id: 't', name: 'everything__toggle-simulated-logging', arguments: {} },
        ],
      },
      { text: observeText('Done.', { final_answer: 'Done.' }) },
    );
    client.chat('Echo hi and toggle logging', { agent_mode: true, tools: ['everything__echo', 'everything__toggle-simulated-logging'] });
    const approval = await client.waitFor('agent_request_input', { timeoutMs: 60_000 });
    expect(approval).toMatchObject({ kind: 'approval', tool: 'everything__toggle-simulated-logging' });
    client.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve' } });
    const events = (await client.untilComplete({ timeoutMs: 60_000 })) as Event[];
    expect(events.filter((event) => event.update_type === 'agent_request_input')).toHaveLength(1);
    expect(
      events
        .filter((event) => event.type === 'tool_complete')
        .map((event) => event.tool_name)
        .sort(),
    ).toEqual(['everything__echo', 'everything__toggle-simulated-logging']);
  });
});

describe('a stop receipt and a cost budget', () => {
  it('agent_stopped names each call of the stopped step and what became of it', async () => {
    const { llm, client } = await start();
    llm.enqueue(
      { text: reasonText('Two calls.') },
      {
        toolCalls: [
          { id: 'calc', name: 'calculator', arguments: { expression: '2+2' } },
          { id: 'w', name: 'write_file', arguments: { name: 'never.txt', content: 'x' } },
        ],
      },
    );
    client.chat('Calculate and write', { agent_mode: true });
    await client.waitFor('agent_request_input');
    await client.waitFor('tool_complete');
    client.send({ type: 'agent_control', action: 'stop' });
    const events = (await client.untilComplete()) as Event[];
    const stopped = events.find((event) => event.update_type === 'agent_stopped');
    expect(stopped).toMatchObject({ reason: 'user' });
    expect((stopped!.calls as Array<Record<string, string>>).sort((a, b) => a.tool_call_id!.localeCompare(b.tool_call_id!))).toEqual([
      { tool_call_id: 'calc', tool: 'calculator', status: 'completed' },
      { tool_call_id: 'w', tool: 'write_file', status: 'not_started' },
    ]);
  });

  it('a run with max_cost_usd ends with "budget" before a call would pass it, and can be continued with more', async () => {
    const { llm, client } = await start();
    // gpt-4o-mini: $0.15 per million prompt tokens; each call here costs $0.00015.
    const usage = { prompt_tokens: 1_000, completion_tokens: 0 };
    llm.enqueue(
      { text: reasonText('Compute.'), usage },
      { toolCalls: [{ name: 'calculator', arguments: { expression: '6*7' } }], usage },
      { text: observeText('42.', { final_answer: '42' }), usage },
    );
    client.chat('What is 6*7?', { agent_mode: true, max_cost_usd: 0.0002 });
    const events = (await client.untilComplete()) as Event[];
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:budget', 'response_complete']);
    expect(llm.requests).toHaveLength(1);
    expect(String(events.findLast((event) => event.type === 'assistant_message')!.content)).toMatch(/cost budget of \$0\.0002/);

    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume', extra_steps: 3, max_cost_usd: 0.01 });
    const more = (await client.untilComplete({ from })) as Event[];
    expect(summarize(more).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
  });
});
