import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import { gate, userTurns } from '../helpers/steer.ts';
import { summarize } from '../helpers/ws-client.ts';

const stepwise = useScriptedStepwise();

type Todo = { id: string; title: string; status: string };
const todoCall = (args: Record<string, unknown>) => ({ name: 'todo_operations', arguments: args });
const updatesOf = (events: Record<string, unknown>[], type: string) => events.filter((event) => event.update_type === type);
const reminders = (request: RecordedRequest) => request.body.messages.filter((message) => message.content?.includes('<system-reminder>'));

async function todosFile(sessionId: string): Promise<Todo[]> {
  const response = await fetch(`${stepwise.server.url}/api/sessions/${sessionId}/files/todos.json`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { todos: Todo[] }).todos;
}

/** Every iteration opens with agent_turn_start and its agent_guidance, and no marker reaches any event. */
function expectWellFormedIterations(events: Record<string, unknown>[]) {
  const kinds = summarize(events);
  const turns = kinds.filter((kind) => kind.startsWith('agent_turn_start')).length;
  expect(turns).toBeGreaterThan(0);
  for (const [index, kind] of kinds.entries()) {
    if (kind.startsWith('agent_turn_start')) expect(kinds[index + 1]).toBe(`agent_guidance:${kind.split(':')[1]}`);
  }
  const text = JSON.stringify(events);
  expect(text).not.toContain('[WORKFLOW_COMPLETE]');
  expect(text).not.toContain('[CONTINUE]');
}

describe('autonomous on the wire', () => {
  it('works a three-todo request through to workflow_complete on the demo model, the list kept as a session file', async () => {
    const { client } = await stepwise.demo();
    const entry = (
      client.session.strategy_catalog as unknown as Array<{ name: string; options_schema: { properties: Record<string, { default: unknown }> } }>
    ).find((strategy) => strategy.name === 'autonomous');
    expect(entry?.options_schema.properties).toMatchObject({ workflow_mode: { default: false } });

    client.chat('Tell three short facts about octopus and keep a list', { agent_mode: true, strategy: 'autonomous' });
    const events = (await client.untilComplete()) as Record<string, unknown>[];
    expectWellFormedIterations(events);
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:workflow_complete', 'response_complete']);
    const lists = updatesOf(events, 'agent_todos').map((event) => event.todos as Todo[]);
    expect(lists[0]!.map((todo) => todo.status)).toEqual(['pending', 'pending', 'pending']);
    expect(lists.at(-1)!.map((todo) => todo.status)).toEqual(['completed', 'completed', 'completed']);
    // Never two in progress at once, whatever the moment.
    for (const list of lists) expect(list.filter((todo) => todo.status === 'in_progress').length).toBeLessThanOrEqual(1);
    const answer = events.find((event) => event.type === 'assistant_message')!.content as string;
    expect(answer).toContain('“octopus” has 7 letters.');
    expect(answer).toContain('“supotco”');
    expect((await todosFile(client.session.session_id)).every((todo) => todo.status === 'completed')).toBe(true);
  });

  it('reminds a model that stops with open todos at levels 1, 2 and 3, sending each guidance once and storing none, then ends at the cap', async () => {
    const { llm, client } = await stepwise.start();
    llm.respond((request) =>
      request.body.messages.some((message) => message.tool_calls)
        ? { text: 'I believe that is all.' }
        : { toolCalls: [todoCall({ operation: 'write', todos: [{ title: 'a' }, { title: 'b' }] })] },
    );
    client.chat('Do two things', { agent_mode: true, strategy: 'autonomous', agent_max_steps: 6 });
    const events = (await client.untilComplete()) as Record<string, unknown>[];
    expectWellFormedIterations(events);
    expect(updatesOf(events, 'agent_guidance').map((event) => event.level)).toEqual([0, 0, 1, 2, 3, 3]);
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:max_steps', 'response_complete']);
    const requests = llm.requests.filter((request) => request.purpose === 'autonomous.iteration');
    expect(requests).toHaveLength(6);
    // Each request carries its own guidance as its last message, and no earlier one.
    for (const request of requests) {
      expect(reminders(request)).toHaveLength(1);
      expect(request.body.messages.at(-1)!.content).toContain('<system-reminder>');
      expect(request.body.tools?.map((tool) => tool.function.name)).toContain('todo_operations');
    }
    expect(requests[3]!.body.messages.at(-1)!.content).toContain("WARNING: You're in a loop");
  });

  it('keeps the list through a stop, lets a person edit it between runs (not during one), and a resumed run works from the edited list', async () => {
    const { llm, client } = await stepwise.start();
    let resumedIteration = 0;
    llm.respond((request) => {
      const calls = request.body.messages.filter((message) => message.tool_calls).length;
      const resumed = request.runId !== llm.requests[0]!.runId;
      if (!resumed) {
        if (calls === 0) return { toolCalls: [todoCall({ operation: 'write', todos: [{ title: 'a' }, { title: 'b' }, { title: 'c' }] })] };
        if (calls === 1) return { text: 'a is done.', toolCalls: [todoCall({ operation: 'update', id: '1', status: 'completed' })] };
        return { hang: true };
      }
      resumedIteration += 1;
      if (resumedIteration === 1) return { text: 'b is done.', toolCalls: [todoCall({ operation: 'update', id: '2', status: 'completed' })] };
      return { text: 'Stopping here. [WORKFLOW_COMPLETE]' };
    });
    const sessionId = client.session.session_id;
    client.chat('Do three things', { agent_mode: true, strategy: 'autonomous' });
    const hanging = await llm.waitFor((request) => request.body.messages.filter((message) => message.tool_calls).length === 2, 30_000);

    client.send({ type: 'todos_set', todos: [{ title: 'edited while running' }] });
    const refused = await client.waitFor('error');
    expect(refused).toMatchObject({ code: 'run_active' });

    client.send({ type: 'agent_control', action: 'stop' });
    await llm.waitForAbort(hanging);
    const stopped = (await client.untilComplete()) as Record<string, unknown>[];
    expect(summarize(stopped).slice(-2)).toEqual(['agent_stopped:user', 'response_complete']);
    expect((await todosFile(sessionId)).map((todo) => todo.status)).toEqual(['completed', 'pending', 'pending']);

    // A person renames b between runs: every tab sees the whole list, without a run id.
    const from = client.events.length;
    client.send({
      type: 'todos_set',
      todos: [
        { id: '1', title: 'a', status: 'completed' },
        { id: '2', title: 'b, as edited', status: 'pending' },
        { id: '3', title: 'c', status: 'pending' },
      ],
    });
    const edited = (await client.next((event) => event.update_type === 'agent_todos', { from })) as Record<string, unknown>;
    expect(edited.run_id).toBeUndefined();
    expect((edited.todos as Todo[]).map((todo) => todo.title)).toEqual(['a', 'b, as edited', 'c']);

    client.send({ type: 'agent_control', action: 'resume' });
    const resumed = (await client.untilComplete({ from: client.events.length })) as Record<string, unknown>[];
    expect(summarize(resumed).slice(-2)).toEqual(['agent_completion:workflow_complete', 'response_complete']);
    const last = llm.requests.at(-1)!;
    expect(last.body.messages[0]!.content).toContain('[completed] 2. b, as edited');
    expect((await todosFile(sessionId)).map((todo) => `${todo.title}:${todo.status}`)).toEqual(['a:completed', 'b, as edited:completed', 'c:pending']);
    // The write and the first update of the stopped run were not made again.
    expect(llm.requests.filter((request) => request.runId === last.runId)).toHaveLength(2);
  });

  it('a message sent during an iteration is read by the next one, which may change its todos', async () => {
    const { llm, client } = await stepwise.start();
    const held = gate();
    const said = 'Drop b; do c instead.';
    llm.respond((request) => {
      const calls = request.body.messages.filter((message) => message.tool_calls).length;
      // The first iteration's reply waits until the message is acknowledged.
      if (calls === 0) return { toolCalls: [todoCall({ operation: 'write', todos: [{ title: 'a' }, { title: 'b' }] })], after: held.promise };
      if (calls === 1 && userTurns(request, said) > 0)
        return {
          text: 'a is done; c instead of b.',
          toolCalls: [
            todoCall({
              operation: 'write',
              todos: [
                { title: 'a', status: 'completed' },
                { title: 'c', status: 'completed' },
              ],
            }),
          ],
        };
      return { text: 'All done. [WORKFLOW_COMPLETE]' };
    });
    client.chat('Do a and b', { agent_mode: true, strategy: 'autonomous' });
    await llm.waitFor((request) => request.purpose === 'autonomous.iteration');
    client.chat(said);
    const ack = (await client.waitFor('message_queued')) as Record<string, unknown>;
    held.open();
    const events = (await client.untilComplete()) as Record<string, unknown>[];
    expect(summarize(events).slice(-2)).toEqual(['agent_completion:workflow_complete', 'response_complete']);
    // The iteration under way did not have it; the next had it once, as did the one after.
    expect(llm.requests.map((request) => userTurns(request, said))).toEqual([0, 1, 1]);
    const steer = updatesOf(events, 'agent_steer');
    expect(steer).toEqual([expect.objectContaining({ message_id: ack.message_id, step: 2, content: said })]);
    expect(steer[0]).not.toHaveProperty('node_id');
    expect((await todosFile(client.session.session_id)).map((todo) => `${todo.title}:${todo.status}`)).toEqual(['a:completed', 'c:completed']);
  });

  it('refuses a todo list with two todos in progress, changing nothing', async () => {
    const { client } = await stepwise.demo();
    client.send({
      type: 'todos_set',
      todos: [
        { title: 'x', status: 'in_progress' },
        { title: 'y', status: 'in_progress' },
      ],
    });
    expect(await client.waitFor('error')).toMatchObject({ code: 'invalid_message' });
    client.send({ type: 'todos_set', todos: [{ title: 'x' }] });
    const saved = (await client.waitFor('agent_todos')) as Record<string, unknown>;
    expect(saved.todos).toEqual([{ id: '1', title: 'x', status: 'pending' }]);
  });
});
