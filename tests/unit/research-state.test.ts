import { GraphError, nextTaskId, parseGraphYaml, parseState, renderState, research, runnableWave, STATE_DOC } from '@stepwise/backend';
import type { LoggedEventBody } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { inProcessKernel } from '../helpers/kernel.ts';
import { type ScriptedAnswer, ScriptedLlmClient } from '../helpers/scripted-llm-client.ts';

const graphYaml = (tasks: string, extraStage = '') => `version: 1
stages:
  - id: "1"
    name: Gather
    tasks:
${tasks}${extraStage}`;
const task = (id: string, more = '') => `      - id: "${id}"
        title: Task ${id}
        agent: literature_scout
${more}`;

function errorOf(source: string): GraphError {
  try {
    parseGraphYaml(source);
  } catch (error) {
    if (error instanceof GraphError) return error;
    throw error;
  }
  throw new Error('the graph was accepted');
}

describe('the task graph of the state document', () => {
  it('parses the YAML with defaults and keeps the seed’s fields', () => {
    const graph = parseGraphYaml(graphYaml(task('1.1') + task('1.2', '        depends_on: ["1.1"]\n        parallel_group: a\n')));
    expect(graph.stages[0]!.tasks.map((t) => [t.id, t.status, t.depends_on])).toEqual([
      ['1.1', 'todo', []],
      ['1.2', 'todo', ['1.1']],
    ]);
    expect(graph.stages[0]!.tasks[1]!.parallel_group).toBe('a');
  });

  it('refuses each broken rule, naming the line and the reason', () => {
    expect(errorOf(graphYaml(task('1.1') + task('1.1'))).message).toMatch(/line 9: stages\.0\.tasks\.1\.id: task id "1\.1" is used twice/);
    expect(errorOf(graphYaml(task('2.1'))).message).toMatch(/task "2\.1" is not in stage 1/);
    expect(errorOf(graphYaml(task('1.1', '        depends_on: ["1.9"]\n'))).message).toMatch(/line 9: .*depends on "1\.9", which is not a task of stage 1/);
    expect(errorOf(graphYaml(task('1.1', '        depends_on: ["1.2"]\n') + task('1.2', '        depends_on: ["1.1"]\n'))).message).toMatch(
      /go round in a circle: 1\.1 → 1\.2 → 1\.1/,
    );
    expect(errorOf(graphYaml(task('1.1', '        status: blocked\n'))).message).toMatch(/line 9: .*blocked without a blocked_reason/);
    expect(errorOf(graphYaml(task('1.1', '        status: skipped\n'))).message).toMatch(/skipped without a skip_reason/);
    expect(errorOf(graphYaml(task('1.1', '        status: superseded\n'))).message).toMatch(/superseded without superseded_by/);
    expect(errorOf(graphYaml(task('1.1')).replace('literature_scout', 'astrologer')).message).toMatch(/RESEARCH_STATE\.md line 8: stages\.0\.tasks\.0\.agent/);
    expect(errorOf('stages: [unclosed').message).toMatch(/line 1: the YAML does not parse/);
  });

  it('round-trips the whole document, its nine sections in order, and names the line of a bad edit in it', () => {
    const state = {
      goal: 'How tall is the tower?',
      constraints: ['metres'],
      bestAnswer: 'About 300 m.',
      graph: parseGraphYaml(graphYaml(task('1.1'))),
      results: ['- 1.1 (literature_scout): found it'],
      evidence: ['- 1.1: a book — p. 3'],
      verifier: [],
      history: ['- planned'],
    };
    const text = renderState(state);
    const headings = text.split('\n').filter((line) => /^#{1,2} /.test(line));
    expect(headings).toEqual([
      '# Research state',
      '## Problem spec',
      '## Current best answer',
      '## Task graph',
      '## Task board',
      '## Results ledger',
      '## Evidence ledger',
      '## Verifier status',
      '## History log',
    ]);
    expect(parseState(text)).toEqual(state);
    const broken = text.replace(/(agent: literature_scout\n\s+status: )todo/, '$1blocked');
    const line = broken.split('\n').findIndex((candidate) => candidate.includes('status: blocked')) + 1;
    expect(() => parseState(broken)).toThrow(`${STATE_DOC} line ${line}: stages.0.tasks.0.status: task "1.1" is blocked without a blocked_reason`);
  });

  it('picks the runnable wave: todo tasks whose dependencies are done or skipped, at most max_parallel', () => {
    const graph = parseGraphYaml(
      graphYaml(
        task('1.1', '        status: done\n') +
          task('1.2', '        depends_on: ["1.1"]\n') +
          task('1.3', '        depends_on: ["1.2"]\n') +
          task('1.4') +
          task('1.5'),
      ),
    );
    const stage = graph.stages[0]!;
    expect(runnableWave(stage, 4).map((t) => t.id)).toEqual(['1.2', '1.4', '1.5']);
    expect(runnableWave(stage, 2).map((t) => t.id)).toEqual(['1.2', '1.4']);
    expect(nextTaskId(stage)).toBe('1.6');
  });
});

const plan = {
  stages: [
    {
      id: '1',
      name: 'Gather',
      verifier_criteria: ['enough'],
      tasks: [1, 2].map((n) => ({ id: `1.${n}`, title: `T${n}`, agent: 'literature_scout', depends_on: [], acceptance_criteria: [], inputs: [] })),
    },
    {
      id: '2',
      name: 'Write',
      verifier_criteria: [],
      tasks: [{ id: '2.1', title: 'W', agent: 'orchestrator', depends_on: [], acceptance_criteria: [], inputs: [] }],
    },
  ],
};
const result = (summary: string) => ({ parsed: { summary, result: summary, evidence: [{ source: 's', location: 'l' }], artifacts: [] } });
const pass = { parsed: { verdict: 'PASS', issues: [], follow_up_tasks: [] } };

function model(overrides: (request: { purpose: string; nodeId?: string }) => ScriptedAnswer | undefined = () => undefined) {
  return new ScriptedLlmClient((request) => {
    const custom = overrides(request);
    if (custom) return custom;
    switch (request.purpose) {
      case 'research.plan':
        return { parsed: plan };
      case 'research.task':
        return { text: `worked on ${request.nodeId}` };
      case 'research.task_result':
        return result(`found ${request.nodeId}`);
      case 'research.report':
        return { text: 'The report.' };
      default:
        return pass;
    }
  });
}

const updates = (events: LoggedEventBody[], type: string) =>
  events.filter((event) => event.type === 'agent_update' && event.update_type === type) as Array<Record<string, unknown>>;

describe('the research strategy', () => {
  it('plans, runs each stage’s wave side by side under the tasks’ node ids, verifies, and reports', async () => {
    const llm = model();
    const run = inProcessKernel(llm, [research]).start('How tall is the tower?', { strategy: 'research' });
    expect(await run.outcome).toMatchObject({ status: 'completed', answer: 'The report.' });
    expect(llm.requests[0]!.schema?.name).toBe('task_graph');
    expect(llm.requests.filter((request) => request.schema?.name === 'task_result').map((request) => request.nodeId)).toEqual(['1.1', '1.2', '2.1']);
    expect(updates(run.sink.events, 'agent_verdict').map((event) => `${event.scope}:${event.target}:${event.verdict}`)).toEqual([
      'stage:1:PASS',
      'stage:2:PASS',
      'final:final:PASS',
    ]);
    // Both tasks of stage 1 started before either finished.
    const kinds = run.sink.summary();
    expect(kinds.indexOf('agent_task_start')).toBeLessThan(kinds.indexOf('agent_task_complete'));
    expect(
      updates(run.sink.events, 'agent_task_start')
        .slice(0, 2)
        .map((event) => event.node_id),
    ).toEqual(['1.1', '1.2']);
    expect(run.files.get('final_report.md')).toBe('The report.\n');
    expect(JSON.parse(run.files.get('task-1.2.json')!)).toMatchObject({ task: '1.2', summary: 'found 1.2' });
    expect(parseState(run.files.get(STATE_DOC)!).graph.stages.map((stage) => stage.status)).toEqual(['passed', 'passed']);
  });

  it('a stage verifier that does not pass adds follow-up tasks to the stage and ends verifier_blocked; the next message runs them', async () => {
    let failed = false;
    const llm = model((request) => {
      if (request.purpose !== 'research.stage_verifier' || failed) return undefined;
      failed = true;
      return { parsed: { verdict: 'FAIL', issues: ['thin'], follow_up_tasks: [{ title: 'More', agent: 'verifier', acceptance_criteria: [] }] } };
    });
    const kernel = inProcessKernel(llm, [research]);
    const first = kernel.start('How tall is the tower?', { strategy: 'research' });
    await first.outcome;
    expect(first.sink.summary().at(-2)).toBe('agent_completion:verifier_blocked');
    expect(updates(first.sink.events, 'agent_verdict')[0]).toMatchObject({ scope: 'stage', target: '1', verdict: 'FAIL', follow_up_task_ids: ['1.3'] });
    const second = kernel.start('Go on, and be thorough', { strategy: 'research', files: first.files });
    expect(await second.outcome).toMatchObject({ status: 'completed', answer: 'The report.' });
    const doc = parseState(first.files.get(STATE_DOC)!);
    expect(doc.graph.stages[0]!.tasks.map((t) => `${t.id}:${t.status}`)).toEqual(['1.1:done', '1.2:done', '1.3:done']);
    expect(doc.history.some((line) => line.includes('guidance: Go on, and be thorough'))).toBe(true);
  });

  it('emits its events with the fields of the wire contract, in order; a task verifier’s call is on the task’s branch, the stage and final verifiers’ are not', async () => {
    const llm = model();
    const run = inProcessKernel(llm, [research]).start('How tall is the tower?', { strategy: 'research', strategyOptions: { task_verification: true } });
    expect(await run.outcome).toMatchObject({ status: 'completed' });
    const runId = updates(run.sink.events, 'agent_task_start')[0]!.run_id;
    expect(typeof runId).toBe('string');
    const first = (type: string) => JSON.stringify(updates(run.sink.events, type)[0]);
    expect(first('agent_task_start')).toBe(
      JSON.stringify({ type: 'agent_update', update_type: 'agent_task_start', run_id: runId, node_id: '1.1', task_id: '1.1', agent: 'literature_scout' }),
    );
    expect(first('agent_task_complete')).toBe(
      JSON.stringify({
        type: 'agent_update',
        update_type: 'agent_task_complete',
        run_id: runId,
        node_id: '1.1',
        task_id: '1.1',
        status: 'done',
        summary: 'found 1.1',
      }),
    );
    expect(first('agent_verdict')).toBe(
      JSON.stringify({
        type: 'agent_update',
        update_type: 'agent_verdict',
        run_id: runId,
        scope: 'task',
        target: '1.1',
        verdict: 'PASS',
        issues: [],
        follow_up_task_ids: [],
      }),
    );
    expect(Object.keys(updates(run.sink.events, 'agent_task_graph')[0]!)).toEqual(['type', 'update_type', 'run_id', 'doc', 'version', 'stages']);
    const verifiers = llm.requests.filter((request) => request.purpose.endsWith('_verifier'));
    expect(verifiers.map((request) => `${request.purpose}:${request.nodeId ?? '-'}:${request.variables?.target}`)).toEqual([
      'research.task_verifier:1.1:1.1',
      'research.task_verifier:1.2:1.2',
      'research.stage_verifier:-:stage:1',
      'research.task_verifier:2.1:2.1',
      'research.stage_verifier:-:stage:2',
      'research.final_verifier:-:final',
    ]);
  });

  it('in step mode runs one wave per message', async () => {
    const llm = model();
    const run = inProcessKernel(llm, [research]).start('How tall is the tower?', { strategy: 'research', strategyOptions: { mode: 'step' } });
    expect(await run.outcome).toMatchObject({ status: 'completed' });
    expect(run.sink.summary().at(-2)).toBe('agent_completion:wave_complete');
    expect(updates(run.sink.events, 'agent_task_complete').map((event) => event.task_id)).toEqual(['1.1', '1.2']);
  });

  it('an invalid edit of the document ends the run naming the line and the reason, and changes nothing', async () => {
    const llm = model();
    const kernel = inProcessKernel(llm, [research]);
    const files = new Map<string, string>();
    await kernel.start('How tall is the tower?', { strategy: 'research', files, strategyOptions: { mode: 'step' } }).outcome;
    const edited = files.get(STATE_DOC)!.replace(/(agent: orchestrator\n(?:.*\n)*?\s+depends_on: )\[\]/, '$1["2.7"]');
    expect(edited).not.toBe(files.get(STATE_DOC));
    files.set(STATE_DOC, edited);
    const calls = llm.requests.length;
    const run = kernel.start('Go on', { strategy: 'research', files });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({
      status: 'failed',
      message: expect.stringMatching(/RESEARCH_STATE\.md line \d+: .*depends on "2\.7", which is not a task of stage 2/),
    });
    expect(files.get(STATE_DOC)).toBe(edited);
    expect(llm.requests.length).toBe(calls);
  });

  it('gives each call a context pack, never the whole document', async () => {
    const llm = model();
    const run = inProcessKernel(llm, [research]).start('How tall is the tower?', { strategy: 'research' });
    await run.outcome;
    const taskCall = llm.requests.find((request) => request.purpose === 'research.task' && request.nodeId === '2.1')!;
    expect(Object.keys(taskCall.variables ?? {})).toEqual(expect.arrayContaining(['goal', 'stage', 'task', 'best_answer', 'issues', 'results']));
    expect(JSON.stringify(taskCall.messages)).not.toContain('TASK_GRAPH_V2');
    expect(String(taskCall.variables?.results)).toContain('1.1 (literature_scout): found 1.1');
  });
});
