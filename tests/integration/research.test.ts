import { describe, expect, it } from 'vitest';
import { plannedTask } from '../fixtures/research-tasks.ts';
import type { RecordedRequest } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { PASS, plannedStage, researchModel, taskToStop } from '../helpers/research-script.ts';
import { gate, userTurns } from '../helpers/steer.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise();

type Event = Record<string, unknown>;
const of = (events: Event[], type: string) => events.filter((event) => event.update_type === type);
const schemaOf = (request: RecordedRequest) => (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format?.json_schema?.name;
const files = () => `${stepwise.server.url}/api/sessions/${stepwise.client.session.session_id}/files`;
const fileText = async (name: string) => (await fetch(`${files()}/${name}`)).text();
/** Uploads the research state document, as a person editing it does. */
const uploadState = (body: string) => fetch(`${files()}?name=RESEARCH_STATE.md`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });

describe('research on the wire', () => {
  it('runs the demo’s three-stage graph truthfully in one go: parallel tasks do the work, the verifier recomputes, every verdict judges what was found', async () => {
    const { client } = await stepwise.demo();
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
    const { llm, client } = await stepwise.start();
    llm.respond(
      researchModel({
        stages: [plannedStage('1', 'Only', ['1.1', '1.2'])],
        task: (request) => {
          const asked = request.body.messages.some((message) => message.role === 'tool');
          if (request.node === '1.1' && !asked) return { toolCalls: [{ name: 'request_input', arguments: { question: 'Which tower?' } }] };
          return { text: `finding of ${request.node}` };
        },
      }),
    );
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

  it('stops one of three parallel tasks alone: only its request is closed, its siblings finish, it ends with its own receipt; run again, it repeats no completed call', async () => {
    const { llm, client } = await stepwise.start();
    // Task 1.2's second round hangs until it is stopped; run again, it answers.
    const { model, siblings, runAgain } = taskToStop();
    llm.respond(model);
    client.chat('Three things at once', { agent_mode: true, strategy: 'research', tools: ['calculator'] });
    const hanging = await llm.waitFor((request) => request.node === '1.2' && request.body.messages.some((message) => message.role === 'tool'));
    client.send({ type: 'agent_control', action: 'stop', node_id: '1.2' });
    await llm.waitForAbort(hanging);
    const stopped = (await client.waitFor('agent_node_stopped')) as Event;
    expect(stopped).toMatchObject({ node_id: '1.2', calls: [] });
    expect(await client.next((event) => event.update_type === 'agent_task_complete' && event.task_id === '1.2')).toMatchObject({ status: 'stopped' });
    runAgain();
    client.send({ type: 'agent_control', action: 'resume', node_id: '1.2' });
    siblings.open();
    const events = (await client.untilComplete()) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(client.events.some((event) => event.type === 'error')).toBe(false);
    // Only the stopped task's request was closed; its siblings finished as they were.
    expect(llm.requests.filter((request) => request.aborted)).toEqual([hanging]);
    expect(of(events, 'agent_task_complete').map((event) => `${event.task_id}:${event.status}`)).toEqual(
      expect.arrayContaining(['1.1:done', '1.3:done', '1.2:stopped', '1.2:done']),
    );
    // Run again, it went on from its completed round: the first round's call and its calculator call were made once.
    const rounds = llm.requests.filter((request) => request.node === '1.2' && request.purpose === 'research.task');
    expect(rounds.map((request) => request.body.messages.filter((message) => message.role === 'tool').length)).toEqual([0, 1, 1]);
    expect(events.filter((event) => event.type === 'tool_start' && event.node_id === '1.2')).toHaveLength(1);
  });

  it('a message for a running task reaches that task’s next call only; one for the run, the stage verifier, whose follow-up work for it goes on in this run', async () => {
    const { llm, client } = await stepwise.start();
    const held = gate();
    const forTask = 'Look only at the north tower.';
    const forRun = 'Give every height in metres.';
    llm.respond(
      researchModel({
        stages: [plannedStage('1', 'Only', ['1.1', '1.2'])],
        // The wave's calls wait until both messages are acknowledged.
        task: (request) => ({ text: `finding of ${request.node}`, after: held.promise }),
        stageVerifier: (request) =>
          userTurns(request, forRun)
            ? {
                text: JSON.stringify({
                  verdict: 'CONDITIONAL',
                  issues: ['The heights are not in metres.'],
                  follow_up_tasks: [{ title: 'Convert the heights to metres', agent: 'literature_scout', acceptance_criteria: [] }],
                }),
              }
            : { text: PASS },
      }),
    );
    client.chat('How tall are the towers?', { agent_mode: true, strategy: 'research' });
    await llm.waitFor((request) => request.purpose === 'research.task' && request.node === '1.1');
    client.chat(forTask, { node_id: '1.1' });
    const taskAck = (await client.waitFor('message_queued')) as Event;
    client.chat(forRun);
    const runAck = (await client.next((event) => event.type === 'message_queued' && event.message_id !== taskAck.message_id)) as Event;
    held.open();
    const events = (await client.untilComplete()) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);

    const seen = (text: string) =>
      llm.requests.filter((request) => userTurns(request, text) > 0).map((request) => [request.purpose, request.node ?? null, userTurns(request, text)]);
    // The task's next call had it (not its sibling's); the run's went to the stage verifier; each once, and no other request as a turn.
    expect(seen(forTask)).toEqual([['research.task_result', '1.1', 1]]);
    expect(seen(forRun)).toEqual([['research.stage_verifier', null, 1]]);
    // The follow-up the verifier added for it ran in this run, the message a constraint of the project.
    expect(of(events, 'agent_task_start').map((event) => event.node_id)).toEqual(['1.1', '1.2', '1.3']);
    const followUp = llm.requests.find((request) => request.purpose === 'research.task' && request.node === '1.3')!;
    expect(followUp.body.messages[0]!.content).toContain(forRun);
    expect(await fileText('RESEARCH_STATE.md')).toContain(`As the person said during the run: ${forRun}`);
    const steers = of(events, 'agent_steer');
    expect(steers).toEqual([
      expect.objectContaining({ message_id: taskAck.message_id, step: 1, node_id: '1.1' }),
      expect.objectContaining({ message_id: runAck.message_id, step: 1 }),
    ]);
    expect(steers[1]).not.toHaveProperty('node_id');
  });

  it('an upload of the document that breaks the graph is refused naming the line, and the document stays as it was', async () => {
    const { client } = await stepwise.demo();
    client.chat('What is 12*7?', { agent_mode: true, strategy: 'research', strategy_options: { mode: 'step' } });
    const first = (await client.untilComplete()) as Event[];
    expect(summarize(first).slice(-2)).toEqual(['agent_completion:wave_complete', 'response_complete']);
    const before = await fileText('RESEARCH_STATE.md');
    const broken = before.replace('agent: verifier', 'agent: fortune_teller');
    const uploaded = await uploadState(broken);
    expect(uploaded.status).toBe(400);
    expect(uploaded.headers.get('content-type')).toContain('json');
    const line = broken.split('\n').findIndex((text) => text.includes('fortune_teller')) + 1;
    const refusal = (await uploaded.json()) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe('invalid_file_content');
    expect(refusal.error.message).toContain(`RESEARCH_STATE.md line ${line}: stages.1.tasks.0.agent`);
    expect(await fileText('RESEARCH_STATE.md')).toBe(before);
  });

  it('a stage verifier that still doubts after two rounds of follow-up work asks the person, and the run goes on as they say', async () => {
    const { llm, client } = await stepwise.start();
    let stageVerdicts = 0;
    llm.respond(
      researchModel({
        stages: [
          {
            id: '1',
            name: 'Figure',
            verifier_criteria: ['the figure checks out'],
            tasks: [{ ...plannedTask('1.1'), title: 'Compute the figure', agent: 'derivation_coder' }],
          },
        ],
        taskResult: () => ({ text: JSON.stringify({ summary: 'a figure', result: 'a figure', evidence: [], artifacts: [] }) }),
        stageVerifier: () => {
          stageVerdicts++;
          return {
            text:
              stageVerdicts <= 3
                ? JSON.stringify({
                    verdict: 'FAIL',
                    issues: ['The figure comes out two ways: step by step or in one expression?'],
                    follow_up_tasks: [{ title: 'Compute the figure again', agent: 'derivation_coder', acceptance_criteria: [] }],
                  })
                : PASS,
          };
        },
      }),
    );
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
    const { llm, client } = await stepwise.start();
    llm.respond(
      researchModel({
        stages: [
          { id: '1', name: 'First', verifier_criteria: [], tasks: [plannedTask('1.1'), plannedTask('1.2'), plannedTask('1.3', ['1.1'])] },
          { id: '2', name: 'Second', verifier_criteria: [], tasks: [plannedTask('2.1'), plannedTask('2.2')] },
        ],
        task: (request) => {
          const answered = request.body.messages.some((message) => message.role === 'tool');
          if ((request.node === '1.1' || request.node === '1.2') && !answered) {
            return { toolCalls: [{ name: 'request_input', arguments: { question: `Question of ${request.node}?` } }] };
          }
          const answer = request.body.messages.find((message) => message.role === 'tool')?.content ?? 'none';
          return { text: `finding of ${request.node} (answer: ${answer})`, delayMs: 50 };
        },
        taskResult: (request) => {
          const finding = request.body.messages.map((message) => message.content ?? '').find((text) => text.startsWith('finding of')) ?? '';
          return { text: JSON.stringify({ summary: finding, result: finding, evidence: [], artifacts: [] }) };
        },
      }),
    );
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
    const lastOf = (node: string) => llm.requests.filter((request) => request.node === node && request.purpose === 'research.task_result').at(-1)!;
    expect(first12.receivedAt).toBeLessThan(lastOf('1.1').receivedAt);
    expect(first11.receivedAt).toBeLessThan(lastOf('1.2').receivedAt);

    // A person skips 2.2 in the document between runs; the next cycles honour it.
    const before = await fileText('RESEARCH_STATE.md');
    const at = before.indexOf('status: todo', before.indexOf('- id: "2.2"'));
    const edited = `${before.slice(0, at)}status: skipped\n        skip_reason: not needed${before.slice(at + 'status: todo'.length)}`;
    expect(edited).toContain('skip_reason: not needed');
    const uploaded = await uploadState(edited);
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
