// Research's state document and cost budget under load meant to stall or overspend, over the wire:
// nested YAML, a graph too large to write back, and parallel tasks racing for one budget.
import { GRAPH_MAX_DEPTH, GRAPH_MAX_NODES, renderState, type ResearchState } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer, type ScriptedReply } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { summarize } from '../helpers/ws-client.ts';
import { type StateTask, stateTask } from '../fixtures/research-tasks.ts';

const stepwise = useScriptedStepwise({ LLM_MODEL: 'gpt-4o-mini' });

type Event = Record<string, unknown>;

const files = () => `${stepwise.server.url}/api/sessions/${stepwise.client.session.session_id}/files`;
const docText = async () => (await fetch(`${files()}/RESEARCH_STATE.md`)).text();
const upload = (body: string) => fetch(`${files()}?name=RESEARCH_STATE.md`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });

const task = stateTask;

function state(tasks: StateTask[]): ResearchState {
  return {
    goal: 'Find the figure',
    constraints: [],
    bestAnswer: '',
    graph: { version: 1, stages: [{ id: '1', name: 'Gather', status: 'todo', verifier_criteria: [], tasks }] },
    results: [],
    evidence: [],
    verifier: [],
    history: [],
  };
}

/** A valid document with its graph's YAML replaced: the first line of the graph gets `yaml` as its value. */
function withGraph(doc: string, yaml: string): string {
  return doc.replace(/^version: 1$/m, `version: 1\nextra: ${yaml}`);
}

describe('the research state document against parser bombs', () => {
  it('nested YAML ([[[… and {a: {a: …, 0.9 MB) uploaded twice at once and written by write_file is refused, the server stays responsive and the document stays', async () => {
    const llm = stepwise.open(await ScriptedLlmServer.start());
    const nestedWrite = withGraph(renderState(state([task('1.1')])), '['.repeat(50_000) + ']'.repeat(50_000));
    llm.respond((request): ScriptedReply => {
      if (request.phase === 'act') {
        const done = request.body.messages.some((message) => message.role === 'tool');
        return done ? { text: 'No more tools.' } : { toolCalls: [{ name: 'write_file', arguments: { name: 'RESEARCH_STATE.md', content: nestedWrite } }] };
      }
      if (request.phase === 'observe') return { text: observeText('Done.', { final_answer: 'Done.' }) };
      return { text: reasonText('Write it.') };
    });
    await stepwise.start({}, llm);
    const before = renderState(state([task('1.1'), task('1.2')]));
    expect((await upload(before)).status).toBe(201);
    const rssBefore = process.memoryUsage().rss;

    const sequences = withGraph(before, '['.repeat(450_000) + ']'.repeat(450_000));
    const mappings = withGraph(before, `${'{a: '.repeat(180_000)}1${'}'.repeat(180_000)}`);
    expect(Buffer.byteLength(sequences)).toBeGreaterThan(900_000);
    expect(Buffer.byteLength(mappings)).toBeGreaterThan(900_000);
    const [first, second, health] = await Promise.all([upload(sequences), upload(mappings), fetch(`${stepwise.server.url}/api/health`)]);
    expect(health.status).toBe(200);
    const depth = new RegExp(
      `^RESEARCH_STATE\\.md line \\d+: the task graph nests more than ${GRAPH_MAX_DEPTH} levels deep; it may nest at most ${GRAPH_MAX_DEPTH}$`,
    );
    for (const refused of [first, second]) {
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({ error: { code: 'invalid_file_content', message: expect.stringMatching(depth) } });
    }

    stepwise.client.chat('Overwrite the research state', { agent_mode: true, tools: ['write_file'], tool_approval: { write_file: 'auto' } });
    const events = (await stepwise.client.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:answered', 'response_complete']);
    expect(String(events.find((event) => event.type === 'tool_error')?.error)).toMatch(/nests more than 32 levels deep/);

    expect(await docText()).toBe(before);
    // The parser stopped at the first token past the bound: no nodes by the hundred thousand.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
  });

  it('a graph of 49,000 items in one flow list (99 KB) is refused, and so is one the server could read but not write back', async () => {
    await stepwise.start();
    const before = renderState(state([task('1.1')]));
    expect((await upload(before)).status).toBe(201);
    const list = (count: number) => `[${Array.from({ length: count }, () => 'a').join(',')}]`;

    const huge = withGraph(before, list(49_000));
    const [refused, health] = await Promise.all([upload(huge), fetch(`${stepwise.server.url}/api/health`)]);
    expect(health.status).toBe(200);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { code: 'invalid_file_content', message: expect.stringMatching(`the task graph has more than ${GRAPH_MAX_NODES} YAML nodes`) },
    });

    // 15,000 items are 15,000 nodes as a flow list, twice that written one per line: refused on the way in.
    const wide = before.replace(/^( +)inputs: \[\]$/m, `$1inputs: ${list(15_000)}`);
    expect(wide).not.toBe(before);
    const unwritable = await upload(wide);
    expect(unwritable.status).toBe(400);
    expect(((await unwritable.json()) as { error: { message: string } }).error.message).toMatch(
      new RegExp(`the task graph would be written with \\d+ YAML nodes; it may have at most ${GRAPH_MAX_NODES}`),
    );
    expect(await docText()).toBe(before);
  });

  it('the strategy never writes a graph it would refuse to read: follow-up tasks that would pass the bound end the run with the reason, the document stays readable', async () => {
    const llm = stepwise.open(await ScriptedLlmServer.start());
    const fail = {
      verdict: 'FAIL',
      issues: ['not enough'],
      follow_up_tasks: [{ title: 'Check everything', agent: 'verifier', acceptance_criteria: Array.from({ length: 400 }, (_, index) => `criterion ${index}`) }],
    };
    llm.respond((request): ScriptedReply => (request.purpose === 'research.stage_verifier' ? { text: JSON.stringify(fail) } : { text: '{}' }));
    await stepwise.start({}, llm);
    // Stage 1 is done but for its verdict, its graph just under the node bound.
    const done = (id: string, inputs: string[] = []) => task(id, { status: 'done', outputs: [`task-${id}.json`], inputs });
    const base = state([done('1.1'), done('1.2')]);
    const filler = Array.from({ length: (GRAPH_MAX_NODES - 400) / 2 - 20 }, (_, index) => `source ${index}`);
    base.graph.stages[0]!.tasks[0]!.inputs = filler;
    const uploaded = await upload(renderState(base));
    expect(uploaded.status).toBe(201);

    stepwise.client.chat('Judge the stage', { agent_mode: true, strategy: 'research' });
    const events = (await stepwise.client.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(events).slice(-2)).toEqual(['agent_error:1', 'response_complete']);
    expect(String(events.find((event) => event.update_type === 'agent_error')?.message)).toMatch(
      new RegExp(`cannot be saved: the task graph would be written with \\d+ YAML nodes; it may have at most ${GRAPH_MAX_NODES}`),
    );
    // The last document written is whole and reads back (an upload of it is accepted); the follow-up is not in it.
    const after = await docText();
    expect(after).toContain('source 0');
    expect(after).not.toContain('Check everything');
    expect((await upload(after)).status).toBe(201);
  });
});

describe('the cost budget of a research run', () => {
  it('eight parallel tasks share one budget: the calls in flight hold their share, the run ends with budget, overshooting by less than one call', async () => {
    const llm = stepwise.open(await ScriptedLlmServer.start());
    const tasks = Array.from({ length: 8 }, (_, index) => ({
      id: `1.${index + 1}`,
      title: `Task ${index + 1}`,
      agent: 'literature_scout',
      depends_on: [],
      acceptance_criteria: [],
      inputs: [],
    }));
    const plan = { stages: [{ id: '1', name: 'Gather', verifier_criteria: [], tasks }] };
    // gpt-4o-mini: $0.15 per million prompt tokens, so each call costs $0.03.
    const usage = { prompt_tokens: 200_000, completion_tokens: 0 };
    const callUsd = 0.03;
    const budget = 0.4;
    llm.respond((request): ScriptedReply => {
      switch (request.purpose) {
        case 'research.plan':
          return { text: JSON.stringify(plan), usage };
        case 'research.task':
          return { text: `finding of ${request.node}`, usage };
        case 'research.task_result':
          return { text: JSON.stringify({ summary: `done ${request.node}`, result: 'r', evidence: [], artifacts: [] }), usage };
        default:
          return { text: JSON.stringify({ verdict: 'PASS', issues: [], follow_up_tasks: [] }), usage };
      }
    });
    await stepwise.start({}, llm);
    stepwise.client.chat('How tall is the tower?', {
      agent_mode: true,
      strategy: 'research',
      strategy_options: { max_parallel: 8 },
      max_cost_usd: budget,
    });
    const events = (await stepwise.client.untilComplete({ timeoutMs: 30_000 })) as Event[];
    expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:budget', 'response_complete']);
    const completion = events.find((event) => event.update_type === 'agent_completion')!;
    const spent = Number(completion.cost_usd);
    expect(spent).toBeLessThanOrEqual(budget + callUsd);
    expect(spent).toBeGreaterThan(budget - 2 * callUsd);
    // Every call the model answered was counted: what it was asked is what the run spent.
    expect(llm.requests.length * callUsd).toBeCloseTo(spent, 10);
    // Parallel tasks ran side by side meanwhile: more than one task's call was made before the first result.
    const purposes = llm.requests.map((request) => request.purpose);
    expect(purposes.indexOf('research.task_result')).toBeGreaterThan(2);
    // The document is left readable for a run with a larger budget.
    expect((await upload(await docText())).status).toBe(201);
  });
});
