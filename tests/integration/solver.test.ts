import { describe, expect, it } from 'vitest';
import type { RecordedRequest, ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { gate, userTurns } from '../helpers/steer.ts';
import { summarize, type TestClient } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise();

type Event = Record<string, unknown>;
const decision = (action: string, extra: Record<string, string> = {}) =>
  JSON.stringify({ action, rationale: `because ${action}`, final_answer: '', question_for_user: '', next_focus: '', ...extra });
const schemaName = (request: RecordedRequest) =>
  (request.body as { response_format?: { json_schema?: { name?: string; strict?: boolean } } }).response_format?.json_schema;

/** A scripted model for the solver: stages say who they are; the orchestrator as `decide` says; `fail` answers 500. */
function solverModel(decide: (loop: number) => string, fail: (request: RecordedRequest) => boolean = () => false) {
  let loop = 0;
  return (request: RecordedRequest): ScriptedReply => {
    if (fail(request)) return { status: 500 };
    if (request.purpose === 'solver.problem_solver') loop += 1;
    if (request.purpose === 'solver.orchestrator') return { text: decide(loop) };
    return { text: `${request.purpose} says hello` };
  };
}

/** Answers the next question (after `from`) with `answer`; returns the question. */
async function answerNext(answer: string, from: number): Promise<Event> {
  const question = (await stepwise.client.next((event) => event.update_type === 'agent_request_input', { from })) as Event;
  stepwise.client.send({ type: 'agent_user_input', content: answer, question_id: question.question_id });
  return question;
}

/** Sends `problem` to the solver, one approach, asking before each stage. */
const askStageByStage = (client: TestClient, problem: string) =>
  client.chat(problem, { agent_mode: true, strategy: 'solver', strategy_options: { approaches: false, auto_advance: false } });

const stages = (events: Event[]) => events.filter((event) => event.update_type === 'agent_stage_complete').map((event) => `${event.stage}:${event.loop}`);

describe('solver on the wire', () => {
  it('asks before each stage with Yes / No; No pauses, and a resume asks again before the next stage and goes on without redoing one', async () => {
    const { llm, client } = await stepwise.start({ LLM_MAX_RETRIES: '0' });
    llm.respond(solverModel(() => decision('FINAL', { final_answer: 'It is **42**.' })));
    askStageByStage(client, 'Problem: what is 6*7?');
    const first = await answerNext('Yes', 0);
    expect(first).toMatchObject({ kind: 'confirm', choices: ['Yes', 'No'], question: 'Go on to the expert evaluator?' });
    const second = await answerNext('No', client.events.indexOf(first as never) + 1);
    expect(second).toMatchObject({ question: 'Go on to the orchestrator?' });
    const paused = (await client.untilComplete()) as Event[];
    expect(summarize(paused).slice(-2)).toEqual(['agent_stopped:paused', 'response_complete']);
    expect(llm.requests.map((request) => request.purpose)).toEqual(['solver.problem_solver', 'solver.expert_evaluator']);

    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    const again = await answerNext('Yes', from);
    expect(again).toMatchObject({ kind: 'confirm', question: 'Go on to the orchestrator?' });
    expect(again.question_id).not.toBe(second.question_id);
    const resumed = (await client.untilComplete({ from })) as Event[];
    expect(summarize(resumed).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(resumed.find((event) => event.type === 'assistant_message')?.content).toBe('It is **42**.');
    expect(llm.requests.map((request) => request.purpose)).toEqual(['solver.problem_solver', 'solver.expert_evaluator', 'solver.orchestrator']);
    expect(schemaName(llm.requests[2]!)).toMatchObject({ name: 'orchestrator_decision', strict: true });
  });

  it('a confirmation takes only Yes or No (case and spaces aside): anything else is refused with invalid_answer and the question stays open', async () => {
    const { llm, client } = await stepwise.start({ LLM_MAX_RETRIES: '0' });
    llm.respond(solverModel(() => decision('FINAL', { final_answer: 'It is **42**.' })));
    askStageByStage(client, 'Problem: what is 6*7?');
    const question = (await client.next((event) => event.update_type === 'agent_request_input')) as Event;
    for (const answer of ['no.', 'NO!', 'nope', 'N', 'Maybe', '', 'yes please']) {
      const from = client.events.length;
      client.send({ type: 'agent_user_input', content: answer, question_id: question.question_id });
      expect(await client.waitFor('error', { from })).toMatchObject({ code: 'invalid_answer' });
    }
    // Nothing was taken as an answer: the run still waits on the same question, and no stage ran.
    expect(llm.requests.map((request) => request.purpose)).toEqual(['solver.problem_solver']);
    const from = client.events.length;
    client.send({ type: 'agent_user_input', content: '  NO ', question_id: question.question_id });
    const paused = (await client.untilComplete({ from })) as Event[];
    expect(summarize(paused).slice(-2)).toEqual(['agent_stopped:paused', 'response_complete']);
    expect(paused.some((event) => event.type === 'error')).toBe(false);
  });

  it('auto-advances without asking until max_loops, and answers the orchestrator’s ASK_USER question', async () => {
    const { llm, client } = await stepwise.start();
    llm.respond(
      solverModel((loop) => (loop === 1 ? decision('ASK_USER', { question_for_user: 'Metres or feet?' }) : decision('CONTINUE', { next_focus: 'units' }))),
    );
    client.chat('Problem: how far is it?', { agent_mode: true, strategy: 'solver', strategy_options: { auto_advance: true, max_loops: 2, approaches: false } });
    const question = await answerNext('metres', 0);
    expect(question).toMatchObject({ kind: 'question', question: 'Metres or feet?' });
    const events = (await client.untilComplete()) as Event[];
    expect(stages(events)).toEqual(['problem_solver:1', 'expert_evaluator:1', 'orchestrator:1', 'problem_solver:2', 'expert_evaluator:2', 'orchestrator:2']);
    expect(events.filter((event) => event.update_type === 'agent_request_input')).toHaveLength(1);
    expect(events.filter((event) => event.update_type === 'agent_decision').map((event) => event.action)).toEqual(['ASK_USER', 'CONTINUE']);
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:max_loops', 'response_complete']);
    const secondSolver = llm.requests.filter((request) => request.purpose === 'solver.problem_solver')[1]!;
    expect(secondSolver.body.messages.at(-1)!.content).toContain('The user answered: metres');
  });

  it('a message sent during a stage is the next stage’s to read, and the orchestrator’s decision reads it too', async () => {
    const { llm, client } = await stepwise.start();
    const held = gate();
    const said = 'Give the answer in French.';
    const decide = solverModel(() => decision('FINAL', { final_answer: 'Quarante-deux.' }));
    // The first stage's reply waits until the message is acknowledged.
    llm.respond((request) => ({ ...decide(request), ...(request.purpose === 'solver.problem_solver' ? { after: held.promise } : {}) }));
    client.chat('Problem: what is 6*7?', { agent_mode: true, strategy: 'solver', strategy_options: { approaches: false } });
    await llm.waitFor((request) => request.purpose === 'solver.problem_solver');
    client.chat(said);
    const ack = (await client.waitFor('message_queued')) as Event;
    held.open();
    const events = (await client.untilComplete()) as Event[];
    expect(llm.requests.map((request) => [request.purpose, userTurns(request, said)])).toEqual([
      ['solver.problem_solver', 0],
      ['solver.expert_evaluator', 1],
      ['solver.orchestrator', 1],
    ]);
    // It comes after the stage's own input, as the person's words.
    expect(llm.requests[2]!.body.messages.at(-1)!.content).toContain(said);
    const steer = events.find((event) => event.update_type === 'agent_steer');
    expect(steer).toMatchObject({ message_id: ack.message_id, step: 2, content: said });
    expect(steer).not.toHaveProperty('node_id');
    expect(events.find((event) => event.type === 'assistant_message')?.content).toBe('Quarante-deux.');
  });

  it('a failed stage ends the run; resume re-runs that stage and goes on', async () => {
    const { llm, client } = await stepwise.start({ LLM_MAX_RETRIES: '0' });
    let failed = false;
    llm.respond(
      solverModel(
        () => decision('FINAL', { final_answer: 'Solved.' }),
        (request) => {
          if (request.purpose !== 'solver.expert_evaluator' || failed) return false;
          failed = true;
          return true;
        },
      ),
    );
    askStageByStage(client, 'Problem: what is 6*7?');
    await answerNext('Yes', 0);
    const failedRun = (await client.untilComplete()) as Event[];
    expect(summarize(failedRun).some((kind) => kind.startsWith('agent_error'))).toBe(true);

    const from = client.events.length;
    client.send({ type: 'agent_control', action: 'resume' });
    await answerNext('Yes', from);
    const resumed = (await client.untilComplete({ from })) as Event[];
    expect(summarize(resumed).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(stages(resumed)).toEqual(['expert_evaluator:1', 'orchestrator:1']);
    expect(llm.requests.map((request) => request.purpose)).toEqual([
      'solver.problem_solver',
      'solver.expert_evaluator',
      'solver.expert_evaluator',
      'solver.orchestrator',
    ]);
  });

  it('snapshot → rollback → resume from the snapshot, on the demo model', async () => {
    const { server, client } = await stepwise.demo();
    askStageByStage(client, 'Problem: what is (17+25)*3?');
    const yes = await answerNext('Yes', 0);
    await answerNext('No', client.events.indexOf(yes as never) + 1);
    await client.untilComplete();

    let from = client.events.length;
    client.send({ type: 'snapshot_save' });
    const saved = (await client.waitFor('snapshot_saved', { from })) as Event;
    expect(String(saved.label)).toMatch(/^Snapshot of .* UTC · loop 1 · expert_evaluator$/);

    from = client.events.length;
    client.send({ type: 'snapshot_rollback', snapshot_id: saved.snapshot_id });
    const rolled = (await client.waitFor('session_rolled_back', { from })) as Event;
    expect(rolled.snapshot_id).toBe(saved.snapshot_id);
    const list = (await (await fetch(`${server.url}/api/sessions/${client.session.session_id}/snapshots`)).json()) as { snapshots: Array<{ kind: string }> };
    expect(list.snapshots.map((snapshot) => snapshot.kind)).toEqual(expect.arrayContaining(['manual', 'rollback']));

    from = client.events.length;
    client.send({ type: 'snapshot_resume', snapshot_id: saved.snapshot_id });
    let confirms = 0;
    // The resumed run asks before the orchestrator again; the demo's orchestrator then asks for a checking loop.
    for (;;) {
      const next = (await client.next((event) => event.update_type === 'agent_request_input' || event.type === 'response_complete', { from })) as Event;
      if (next.type === 'response_complete') break;
      confirms += 1;
      client.send({ type: 'agent_user_input', content: 'Yes', question_id: next.question_id });
      from = client.events.indexOf(next as never) + 1;
    }
    const all = client.events as Event[];
    const resumedStart = all.findLast((event) => event.update_type === 'agent_start')!;
    expect(resumedStart.resumed_from).toBeDefined();
    const resumed = all.slice(all.indexOf(resumedStart));
    expect(confirms).toBeGreaterThanOrEqual(2);
    expect(stages(resumed)[0]).toBe('orchestrator:1');
    expect(resumed.filter((event) => event.update_type === 'agent_decision').map((event) => event.action)).toEqual(['CONTINUE', 'FINAL']);
    expect(summarize(resumed).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(String(resumed.find((event) => event.type === 'assistant_message')?.content)).toContain('**126**');
  });
});
