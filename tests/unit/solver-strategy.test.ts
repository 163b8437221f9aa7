import { checkProblem, type CompletionRequest, ModelError, solver, textAnswer } from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';
import { type ScriptedAnswer, ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

type Decision = { action: 'CONTINUE' | 'FINAL' | 'ASK_USER'; rationale?: string; final_answer?: string; question_for_user?: string; next_focus?: string };
const decision = (d: Decision) => ({ parsed: { rationale: 'because', final_answer: '', question_for_user: '', next_focus: '', ...d } });

/** A model for the solver: each stage answers with its name and loop; the orchestrator as `decide` says. */
function model(decide: (loop: number) => Decision, extra: (request: CompletionRequest) => ScriptedAnswer | undefined = () => undefined) {
  return new ScriptedLlmClient((request) => {
    const loop = Number(request.variables?.loop ?? 1);
    const custom = extra(request);
    if (custom) return custom;
    if (request.purpose === 'solver.orchestrator') return decision(decide(loop));
    return { text: `${request.purpose.replace('solver.', '')} output (loop ${loop})` };
  });
}

function start(llm: ScriptedLlmClient, strategyOptions: Record<string, unknown>, question = 'Problem: what is 6*7?', maxSteps = 10) {
  return inProcessKernel(llm, [solver]).start(question, { strategy: 'solver', strategyOptions, maxSteps });
}

const updates = (events: LoggedEventBody[], type: string) =>
  events.filter((event) => event.type === 'agent_update' && event.update_type === type) as Array<Record<string, unknown>>;

/** Answers every question of the run as `answer` says, as they come. */
async function answerQuestions(run: ReturnType<typeof start>, answer: (question: Record<string, unknown>) => string) {
  let answered = 0;
  for (;;) {
    const next = await Promise.race([
      run.sink.until(
        (event) =>
          event.type === 'agent_update' && event.update_type === 'agent_request_input' && updates(run.sink.events, 'agent_request_input').length > answered,
      ),
      run.outcome.then(() => undefined),
    ]);
    if (!next) return;
    const question = updates(run.sink.events, 'agent_request_input')[answered]!;
    answered += 1;
    run.control.provideInput(textAnswer(answer(question)), String(question.question_id));
  }
}

describe('the solver strategy', () => {
  it('with approaches: proposer → evaluator → solver → expert → orchestrator, each output the next stage’s input, FINAL answers', async () => {
    const llm = model(() => ({ action: 'FINAL', final_answer: '**42**' }));
    const run = start(llm, { auto_advance: true });
    expect(await run.outcome).toMatchObject({ status: 'completed', answer: '**42**' });
    expect(llm.purposes()).toEqual([
      'solver.approach_proposer',
      'solver.approach_evaluator',
      'solver.problem_solver',
      'solver.expert_evaluator',
      'solver.orchestrator',
    ]);
    const userInput = (index: number) => (llm.requests[index]!.messages.at(-1) as { content: string }).content;
    expect(userInput(0)).toBe('Problem: what is 6*7?');
    expect(userInput(1)).toBe('approach_proposer output (loop 1)');
    expect(userInput(2)).toBe('approach_evaluator output (loop 1)');
    expect(userInput(3)).toContain('problem_solver output (loop 1)');
    expect(userInput(4)).toContain('expert_evaluator output (loop 1)');
    expect(llm.requests[4]!.schema?.name).toBe('orchestrator_decision');
    expect(llm.requests.every((request) => request.messages[0]!.role === 'system')).toBe(true);
    expect(updates(run.sink.events, 'agent_stage_start').map((event) => event.stage)).toEqual([
      'approach_proposer',
      'approach_evaluator',
      'problem_solver',
      'expert_evaluator',
      'orchestrator',
    ]);
    expect(updates(run.sink.events, 'agent_decision')).toEqual([expect.objectContaining({ loop: 1, action: 'FINAL', final_answer: '**42**' })]);
    expect(run.sink.summary().at(-2)).toBe('agent_completion:answered');
  });

  it('emits its events with the fields of the wire contract, in order, and labels a snapshot with the last stage read back', async () => {
    const llm = model(() => ({ action: 'FINAL', final_answer: '42' }));
    const run = start(llm, { auto_advance: true, approaches: false });
    await run.outcome;
    const runId = updates(run.sink.events, 'agent_stage_start')[0]!.run_id;
    expect(typeof runId).toBe('string');
    const first = (type: string) => JSON.stringify(updates(run.sink.events, type)[0]);
    expect(first('agent_stage_start')).toBe(
      JSON.stringify({ type: 'agent_update', update_type: 'agent_stage_start', run_id: runId, stage: 'problem_solver', loop: 1 }),
    );
    expect(first('agent_stage_complete')).toBe(
      JSON.stringify({
        type: 'agent_update',
        update_type: 'agent_stage_complete',
        run_id: runId,
        stage: 'problem_solver',
        loop: 1,
        content: 'problem_solver output (loop 1)',
      }),
    );
    expect(first('agent_decision')).toBe(
      JSON.stringify({
        type: 'agent_update',
        update_type: 'agent_decision',
        run_id: runId,
        loop: 1,
        action: 'FINAL',
        rationale: 'because',
        final_answer: '42',
        question_for_user: '',
        next_focus: '',
      }),
    );
    const label = solver.session!.snapshotLabel!;
    expect(label(run.sink.events)).toBe(' · loop 1 · orchestrator');
    const start1 = run.sink.events.findIndex((event) => event.type === 'agent_update' && event.update_type === 'agent_stage_start');
    expect(label(run.sink.events.slice(0, start1 + 1))).toBe(' · loop 1 · problem_solver');
    expect(label(run.sink.events.slice(0, start1))).toBe('');
  });

  it('without approaches: CONTINUE seeds another loop with its focus, then FINAL', async () => {
    const llm = model((loop) => (loop === 1 ? { action: 'CONTINUE', next_focus: 'check the units' } : { action: 'FINAL', final_answer: 'done' }));
    const run = start(llm, { auto_advance: true, approaches: false });
    expect(await run.outcome).toMatchObject({ status: 'completed', answer: 'done' });
    expect(llm.purposes()).toEqual([
      'solver.problem_solver',
      'solver.expert_evaluator',
      'solver.orchestrator',
      'solver.problem_solver',
      'solver.expert_evaluator',
      'solver.orchestrator',
    ]);
    expect(llm.requests[3]!.variables?.next_focus).toBe('check the units');
    expect((llm.requests[3]!.messages.at(-1) as { content: string }).content).toContain('Focus of this loop: check the units');
    expect(updates(run.sink.events, 'agent_stage_start').map((event) => event.loop)).toEqual([1, 1, 1, 2, 2, 2]);
  });

  it('auto-advance ends at max_loops with the last solution', async () => {
    const llm = model(() => ({ action: 'CONTINUE', next_focus: 'more' }));
    const run = start(llm, { auto_advance: true, approaches: false, max_loops: 2 });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'completed' });
    expect((outcome as { answer: string }).answer).toContain('problem_solver output (loop 2)');
    expect(run.sink.summary().at(-2)).toBe('agent_completion:max_loops');
    expect(llm.purposes().filter((purpose) => purpose === 'solver.orchestrator')).toHaveLength(2);
  });

  it('ASK_USER asks the orchestrator’s question and the next loop goes on with the answer', async () => {
    const llm = model((loop) => (loop === 1 ? { action: 'ASK_USER', question_for_user: 'In which unit?' } : { action: 'FINAL', final_answer: 'In metres.' }));
    const run = start(llm, { auto_advance: true, approaches: false });
    await answerQuestions(run, () => 'metres');
    expect(await run.outcome).toMatchObject({ status: 'completed', answer: 'In metres.' });
    const question = updates(run.sink.events, 'agent_request_input')[0]!;
    expect(question).toMatchObject({ question: 'In which unit?', kind: 'question' });
    expect((llm.requests[3]!.messages.at(-1) as { content: string }).content).toContain('The user answered: metres');
  });

  it('asks before each next stage unless auto-advance, naming it with Yes / No; No pauses the run', async () => {
    const llm = model(() => ({ action: 'FINAL', final_answer: 'x' }));
    const run = start(llm, { approaches: false, auto_advance: false });
    await answerQuestions(run, (question) => (String(question.question).includes('orchestrator') ? 'No' : 'Yes'));
    expect(await run.outcome).toMatchObject({ status: 'stopped', reason: 'paused' });
    const questions = updates(run.sink.events, 'agent_request_input');
    expect(questions.map((question) => question.question)).toEqual(['Go on to the expert evaluator?', 'Go on to the orchestrator?']);
    expect(questions.every((question) => question.kind === 'confirm' && JSON.stringify(question.choices) === '["Yes","No"]')).toBe(true);
    expect(llm.purposes()).toEqual(['solver.problem_solver', 'solver.expert_evaluator']);
    expect(updates(run.sink.events, 'agent_stopped')).toEqual([expect.objectContaining({ reason: 'paused' })]);
  });

  it('in auto mode retries a failed stage once, and a second failure ends the run', async () => {
    let failures = 0;
    const flaky = model(
      () => ({ action: 'FINAL', final_answer: 'ok' }),
      (request) => (request.purpose === 'solver.expert_evaluator' && failures++ < 1 ? { error: new ModelError('The model endpoint answered 500') } : undefined),
    );
    const once = start(flaky, { auto_advance: true, approaches: false });
    expect(await once.outcome).toMatchObject({ status: 'completed', answer: 'ok' });
    expect(flaky.purposes().filter((purpose) => purpose === 'solver.expert_evaluator')).toHaveLength(2);

    const broken = model(
      () => ({ action: 'FINAL' }),
      (request) => (request.purpose === 'solver.expert_evaluator' ? { error: new ModelError('The model endpoint answered 500') } : undefined),
    );
    const twice = start(broken, { auto_advance: true, approaches: false });
    expect(await twice.outcome).toMatchObject({ status: 'failed' });
    expect(broken.purposes().filter((purpose) => purpose === 'solver.expert_evaluator')).toHaveLength(2);
  });

  it('does not retry a failed stage when a person confirms each stage, nor an unusable orchestrator answer in auto mode', async () => {
    const broken = model(
      () => ({ action: 'FINAL' }),
      (request) => (request.purpose === 'solver.problem_solver' ? { error: new ModelError('The model endpoint answered 500') } : undefined),
    );
    const manual = start(broken, { approaches: false, auto_advance: false });
    expect(await manual.outcome).toMatchObject({ status: 'failed' });
    expect(broken.purposes()).toEqual(['solver.problem_solver']);

    const unusable = model(
      () => ({ action: 'FINAL' }),
      (request) =>
        request.purpose === 'solver.orchestrator' ? { error: new ModelError('The model’s decision is not valid JSON', { category: 'output' }) } : undefined,
    );
    const auto = start(unusable, { auto_advance: true, approaches: false });
    expect(await auto.outcome).toMatchObject({ status: 'failed' });
    expect(unusable.purposes().filter((purpose) => purpose === 'solver.orchestrator')).toHaveLength(1);
  });

  it('refuses an empty problem statement, and one without a keyword when require_keyword is on', async () => {
    expect(() => checkProblem('   ', false)).toThrow('The problem statement is empty');
    expect(() => checkProblem('what is 6*7?', true)).toThrow(/"problem", "question" or "research"/);
    expect(checkProblem(' A question: what is 6*7? ', true)).toBe('A question: what is 6*7?');
    const llm = model(() => ({ action: 'FINAL' }));
    const run = start(llm, { require_keyword: true }, 'what is 6*7?');
    expect(await run.outcome).toMatchObject({ status: 'failed', message: expect.stringContaining('require_keyword') });
    expect(llm.requests).toHaveLength(0);
  });
});
