import { describe, expect, it } from 'vitest';
import { observeText, reasonText, type ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useScriptedStepwise } from '../helpers/per-test.ts';
import type { TestServer } from '../helpers/stepwise.ts';
import type { TestClient } from '../helpers/ws-client.ts';

let llm: ScriptedLlmServer | undefined;
let server: TestServer | undefined;
let client: TestClient | undefined;
const stepwise = useScriptedStepwise();

describe('the notepad', () => {
  it('keeps notes across runs in the session file notepad.md, and plan_execute reads them before planning', async () => {
    ({ llm, server, client } = await stepwise.start());
    llm.enqueue(
      { text: reasonText('Note the budget.') },
      { toolCalls: [{ id: 'n1', name: 'notepad', arguments: { operation: 'append', text: 'The budget is 40 EUR.' } }] },
      { text: observeText('Noted.', { final_answer: 'I noted it.', should_continue: false }) },
    );
    client.chat('Remember that the budget is 40 EUR', { agent_mode: true, tools: ['notepad'], tool_approval: { notepad: 'auto' } });
    const first = await client.untilComplete();
    expect(first.find((event) => event.type === 'tool_complete')).toMatchObject({ tool_name: 'notepad', result: expect.stringContaining('1 note') });
    expect(first.find((event) => event.type === 'file_saved')).toMatchObject({ file: { name: 'notepad.md' }, source: 'agent' });

    llm.respond((request) => (request.purpose === 'plan_execute.plan' ? { text: JSON.stringify({ steps: [] }) } : { text: 'Within budget.' }));
    const from = client.events.length;
    client.chat('Plan a dinner', { agent_mode: true, strategy: 'plan_execute' });
    await client.untilComplete({ from });
    const plan = llm.requests.find((request) => request.purpose === 'plan_execute.plan')!;
    expect(plan.body.messages[0]!.content).toContain('- The budget is 40 EUR.');

    const download = await fetch(`${server.url}/api/sessions/${client.session.session_id}/files/notepad.md`);
    expect(await download.text()).toBe('- The budget is 40 EUR.\n');
  });

  it('reads back what was noted, and says when it is empty', async () => {
    ({ llm, server, client } = await stepwise.start());
    llm.enqueue(
      { text: reasonText('Read the notes.') },
      { toolCalls: [{ id: 'r1', name: 'notepad', arguments: { operation: 'read' } }] },
      { text: observeText('Empty.', { final_answer: 'Nothing noted yet.', should_continue: false }) },
    );
    client.chat('What did we note?', { agent_mode: true, tools: ['notepad'] });
    const events = await client.untilComplete();
    expect(events.find((event) => event.type === 'tool_complete')).toMatchObject({ result: 'The notepad is empty.' });
  });
});
