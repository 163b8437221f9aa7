import { describe, expect, it } from 'vitest';
import { type RecordedRequest, ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';
import { plannedTask } from '../fixtures/research-tasks.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();
const open = stepwise.open;

type Event = Record<string, unknown>;
const of = (events: Event[], type: string) => events.filter((event) => event.update_type === type);
const schemaOf = (request: RecordedRequest) => (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format?.json_schema?.name;
const fileText = async (name: string) => (await fetch(`${server!.url}/api/sessions/${client!.session.session_id}/files/${name}`)).text();

describe('research on the wire', () => {
  it('runs the demo’s three-stage graph truthfully in one go: parallel tasks do the work, the verifier recomputes, every verdict judges what was found', async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' }));
    client = open(await TestClient.connect(server.wsUrl));
    client.chat('What time is it, and what is 12*7?', { agent_mode: true, strategy: 'research' });
    const first = (await client.untilComplete()) as Event[];
    expect(summarize(first).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(of(first, 'agent_verdict').map((event) => `${event.scope}:${event.target}:${event.verdict}`)).toEqual([
      'stage:1:PASS',
      'stage:2:PASS',
      'stage:3:PASS',
      'final:final:PASS',
    ]);
    const starts = of(first, 'agent_task_start').map((event) => event.node_id);
    expect(starts).toEqual(['1.1', '1.2', '2.1', '3.1']);
    // The scout and the derivation started before either finished: they ran side by side.
    expect(first.indexOf(of(first, 'agent_task_start')[1]!)).toBeLessThan(first.indexOf(of(first, 'agent_task_complete')[0]!));
    const tools = first.filter((event) => event.type === 'tool_start').map((event) => `${event.node_id}:${event.tool_name}`);
    expect(tools).toEqual(expect.arrayContaining(['1.1:current_time', '1.2:calculator', '2.1:calculator']));
    const graph = of(first, 'agent_task_graph').at(-1) as { doc: string; stages: Array<{ status: string }> };
    expect(graph).toMatchObject({ doc: 'RESEARCH_STATE.md', version: 1 });
    expect(graph.stages.map((stage) => stage.status)).toEqual(['passed', 'passed', 'passed']);
    const report = await fileText('final_report.md');
    expect(report).toContain('`12*7` = **84**.');
    expect(report).toMatch(/It is now \*\*\d{4}-\d\d-\d\dT/);
    expect(report).toContain('Recomputed `12*7` = 84 in one go: it matches the derivation.');
    expect(await fileText('RESEARCH_STATE.md')).toContain('```yaml TASK_GRAPH_V2');
    expect(JSON.parse(await fileText('task-1.2.json'))).toMatchObject({ task: '1.2', summary: '`12*7` = 84 (1 calculator step: 84).' });

    // A follow-up message on the finished project is guidance in its history, and ends answered again.
    const from = client.events.length;
    client.chat('Go on', { agent_mode: true, strategy: 'research' });
    const second = (await client.untilComplete({ from })) as Event[];
    expect(summarize(second).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(await fileText('RESEARCH_STATE.md')).toContain('guidance: Go on');
  });

  it('a task asks the person with its own question and node id while the other task of its wave goes on', async () => {
    llm = open(await ScriptedLlmServer.start());
    const plan = {
      stages: [
        {
          id: '1',
          name: 'Only',
          verifier_criteria: [],
          tasks: ['1.1', '1.2'].map((id) => ({ id, title: `Task ${id}`, agent: 'literature_scout', depends_on: [], acceptance_criteria: [], inputs: [] })),
        },
      ],
    };
    const verdict = JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] });
    llm.respond((request): ScriptedReply => {
      switch (request.purpose) {
        case 'research.plan':
          return { text: JSON.stringify(plan) };
        case 'research.task': {
          const asked = request.body.messages.some((message) => message.role === 'tool');
          if (request.node === '1.1' && !asked) return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which tower?' } }] };
          return { text: `finding of ${request.node}` };
        }
        case 'research.task_result':
          return { text: JSON.stringify({ summary: `done ${request.node}`, result: `result ${request.node}`, evidence: [], artifacts: [] }) };
        case 'research.report':
          return { text: 'Report.' };
        default:
          return { text: verdict };
      }
    });
    ({ server, client } = await stepwise.start({}, llm));
    client.chat('How tall is the tower?', { agent_mode: true, strategy: 'research' });
    const question = (await client.waitFor('agent_request_input')) as Event;
    expect(question).toMatchObject({ node_id: '1.1', question: 'Which tower?' });
    // Meanwhile task 1.2 finishes, and 1.1 shows as blocked with the question as its reason.
    await client.next((event) => event.update_type === 'agent_task_complete' && event.task_id === '1.2');
    const blockedGraph = (await client.next(
      (event) =>
        event.update_type === 'agent_task_graph' &&
        (event.stages as Array<{ tasks: Array<{ id: string; status: string }> }>)[0]!.tasks[0]!.status === 'blocked',
    )) as Event;
    expect(blockedGraph).toBeDefined();
    expect(await fileText('RESEARCH_STATE.md')).toContain('blocked_reason: "waiting for the user\'s answer: Which tower?"');
    client.send({ type: 'agent_user_input', content: 'The Eiffel Tower', question_id: question.question_id });
    const events = (await client.untilComplete()) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    const resumed = llm.requests.filter((request) => request.purpose === 'research.task' && request.node === '1.1').at(-1)!;
    expect(resumed.body.messages.some((message) => message.role === 'tool' && message.content === 'The Eiffel Tower')).toBe(true);
    expect(llm.requests.filter((request) => schemaOf(request) === 'task_result')).toHaveLength(2);
    expect(resumed.body.messages.map((message) => message.content ?? '').join('\n')).not.toContain('TASK_GRAPH_V2');
  });

  it('an upload of the document that breaks the graph is refused naming the line, and the document stays as it was', async () => {
    server = open(await startStepwise({ LLM_PROVIDER: 'demo', DEMO_DELAY_MS: '0' }));
    client = open(await TestClient.connect(server.wsUrl));
    client.chat('What is 12*7?', { agent_mode: true, strategy: 'research', strategy_options: { mode: 'step' } });
    const first = (await client.untilComplete()) as Event[];
    expect(summarize(first).slice(-2)).toEqual(['agent_completion:wave_complete', 'response_complete']);
    const before = await fileText('RESEARCH_STATE.md');
    const broken = before.replace('agent: verifier', 'agent: fortune_teller');
    const uploaded = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=RESEARCH_STATE.md`, {
      method: 'POST',
      body: broken,
      headers: { 'content-type': 'text/plain' },
    });
    expect(uploaded.status).toBe(400);
    expect(uploaded.headers.get('content-type')).toContain('json');
    const line = broken.split('\n').findIndex((text) => text.includes('fortune_teller')) + 1;
    const refusal = (await uploaded.json()) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe('invalid_file_content');
    expect(refusal.error.message).toContain(`RESEARCH_STATE.md line ${line}: stages.1.tasks.0.agent`);
    expect(await fileText('RESEARCH_STATE.md')).toBe(before);
  });

  it('a stage verifier that still doubts after two rounds of follow-up work asks the person, and the run goes on as they say', async () => {
    llm = open(await ScriptedLlmServer.start());
    const plan = {
      stages: [
        {
          id: '1',
          name: 'Figure',
          verifier_criteria: ['the figure checks out'],
          tasks: [{ id: '1.1', title: 'Compute the figure', agent: 'derivation_coder', depends_on: [], acceptance_criteria: [], inputs: [] }],
        },
      ],
    };
    let stageVerdicts = 0;
    llm.respond((request): ScriptedReply => {
      switch (request.purpose) {
        case 'research.plan':
          return { text: JSON.stringify(plan) };
        case 'research.task':
          return { text: `finding of ${request.node}` };
        case 'research.task_result':
          return { text: JSON.stringify({ summary: 'a figure', result: 'a figure', evidence: [], artifacts: [] }) };
        case 'research.stage_verifier':
          stageVerdicts++;
          return {
            text: JSON.stringify(
              stageVerdicts <= 3
                ? {
                    verdict: 'FAIL',
                    issues: ['The figure comes out two ways: step by step or in one expression?'],
                    follow_up_tasks: [{ title: 'Compute the figure again', agent: 'derivation_coder', acceptance_criteria: [] }],
                  }
                : { verdict: 'PASS', issues: [], follow_up_tasks: [] },
            ),
          };
        case 'research.report':
          return { text: 'Report.' };
        default:
          return { text: JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] }) };
      }
    });
    ({ server, client } = await stepwise.start({}, llm));
    // Two rounds of follow-up work, each run ending for the person to go on.
    client.chat('Work out the figure', { agent_mode: true, strategy: 'research', strategy_options: { task_verification: false } });
    expect(summarize((await client.untilComplete()) as Event[]).slice(-2)).toEqual(['agent_completion:verifier_blocked', 'response_complete']);
    let from = client.events.length;
    client.chat('Go on', { agent_mode: true, strategy: 'research', strategy_options: { task_verification: false } });
    expect(summarize((await client.untilComplete({ from })) as Event[]).slice(-2)).toEqual(['agent_completion:verifier_blocked', 'response_complete']);
    // The third doubt: no third round of its own, a question to the person instead.
    from = client.events.length;
    client.chat('Go on', { agent_mode: true, strategy: 'research', strategy_options: { task_verification: false } });
    const asked = await client.waitFor('agent_request_input', { from });
    expect(String(asked.question)).toMatch(/^Stage 1 \(Figure\) was redone 2 times and its verifier still doubts it: The figure comes out two ways/);
    client.send({ type: 'agent_user_input', question_id: asked.question_id, content: 'Use the step-by-step figure' });
    const third = (await client.untilComplete({ from })) as Event[];
    expect(summarize(third).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    const doc = await fileText('RESEARCH_STATE.md');
    expect(doc).toContain('As the person said: Use the step-by-step figure');
    expect(doc).toContain('guidance on stage 1: Use the step-by-step figure');
    expect(doc).not.toMatch(/title: "?Compute the figure again"?[\s\S]*title: "?Compute the figure again"?[\s\S]*title: "?Compute the figure again"?/);
    expect(of(third, 'agent_request_input')).toHaveLength(1);
  });

  it('runs a wave side by side at the model server, a dependent task only after its dependency, the next stage only after a PASS; two questions answered out of order; an edit honoured by the next cycle', async () => {
    llm = open(await ScriptedLlmServer.start());
    const task = plannedTask;
    const plan = {
      stages: [
        { id: '1', name: 'First', verifier_criteria: [], tasks: [task('1.1'), task('1.2'), task('1.3', ['1.1'])] },
        { id: '2', name: 'Second', verifier_criteria: [], tasks: [task('2.1'), task('2.2')] },
      ],
    };
    const pass = JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] });
    llm.respond((request): ScriptedReply => {
      switch (request.purpose) {
        case 'research.plan':
          return { text: JSON.stringify(plan) };
        case 'research.task': {
          const answered = request.body.messages.some((message) => message.role === 'tool');
          if ((request.node === '1.1' || request.node === '1.2') && !answered) {
            return { toolCalls: [{ name: 'request_input', arguments: { question: `Question of ${request.node}?` } }] };
          }
          const answer = request.body.messages.find((message) => message.role === 'tool')?.content ?? 'none';
          return { text: `finding of ${request.node} (answer: ${answer})`, delayMs: 50 };
        }
        case 'research.task_result': {
          const finding = request.body.messages.map((message) => message.content ?? '').find((text) => text.startsWith('finding of')) ?? '';
          return { text: JSON.stringify({ summary: finding, result: finding, evidence: [], artifacts: [] }) };
        }
        case 'research.report':
          return { text: 'Report.' };
        default:
          return { text: pass };
      }
    });
    ({ server, client } = await stepwise.start({}, llm));
    client.chat('Study it', { agent_mode: true, strategy: 'research', strategy_options: { mode: 'step' } });
    // Both tasks of the wave ask at once; the answers come in the other order.
    const first = (await client.next((event) => event.update_type === 'agent_request_input' && event.node_id === '1.1')) as Event;
    const second = (await client.next((event) => event.update_type === 'agent_request_input' && event.node_id === '1.2')) as Event;
    client.send({ type: 'agent_user_input', content: 'answer for 1.2', question_id: second.question_id });
    client.send({ type: 'agent_user_input', content: 'answer for 1.1', question_id: first.question_id });
    const wave = (await client.untilComplete()) as Event[];
    expect(summarize(wave).slice(-2)).toEqual(['agent_completion:wave_complete', 'response_complete']);
    const summaries = Object.fromEntries(of(wave, 'agent_task_complete').map((event) => [event.task_id, event.summary]));
    expect(summaries).toEqual({ '1.1': 'finding of 1.1 (answer: answer for 1.1)', '1.2': 'finding of 1.2 (answer: answer for 1.2)' });
    // 1.1 and 1.2 were at the model server at the same time.
    const first11 = llm.requests.find((request) => request.node === '1.1')!;
    const first12 = llm.requests.find((request) => request.node === '1.2')!;
    const lastOf = (node: string) => llm!.requests.filter((request) => request.node === node && request.purpose === 'research.task_result').at(-1)!;
    expect(first12.receivedAt).toBeLessThan(lastOf('1.1').receivedAt);
    expect(first11.receivedAt).toBeLessThan(lastOf('1.2').receivedAt);

    // A person skips 2.2 in the document between runs; the next cycles honour it.
    const before = await fileText('RESEARCH_STATE.md');
    const at = before.indexOf('status: todo', before.indexOf('- id: "2.2"'));
    const edited = `${before.slice(0, at)}status: skipped\n        skip_reason: not needed${before.slice(at + 'status: todo'.length)}`;
    expect(edited).toContain('skip_reason: not needed');
    const uploaded = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files?name=RESEARCH_STATE.md`, {
      method: 'POST',
      body: edited,
      headers: { 'content-type': 'text/plain' },
    });
    expect(uploaded.ok).toBe(true);
    const from = client.events.length;
    client.chat('Go on', { agent_mode: true, strategy: 'research' });
    const rest = (await client.untilComplete({ from })) as Event[];
    expect(summarize(rest).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    // 1.3 (after 1.1) ran in the next wave; stage 2 only after stage 1 passed; 2.2 never ran.
    const order = rest
      .filter((event) => event.update_type === 'agent_task_start' || event.update_type === 'agent_verdict')
      .map((event) => String(event.task_id ?? `${event.scope}:${event.target}`));
    expect(order).toEqual(['1.3', 'stage:1', '2.1', 'stage:2', 'final:final']);
    const start13 = llm.requests.find((request) => request.node === '1.3')!;
    expect(start13.receivedAt).toBeGreaterThan(lastOf('1.1').receivedAt);
  });
});
