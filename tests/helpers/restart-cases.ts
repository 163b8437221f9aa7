import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { observeText, reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useServerProcesses } from './per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess, type StepwiseProcess } from './process.ts';
import { summarize, TestClient } from './ws-client.ts';

/**
 * The cases of a server killed with SIGKILL and started again on the same store. Each store's
 * cases are a file of their own (integration/restart*.test.ts) so that they run side by side: each
 * test starts the server process twice, which takes seconds on a busy machine.
 */

/**
 * A store the server runs on: its name, and the environment of a fresh one for each test, which
 * `env` makes with (or hands to) the test's `processes` to be removed after it.
 */
export interface StoreSetup {
  name: string;
  env: (processes: ReturnType<typeof useServerProcesses>) => Promise<Record<string, string>>;
}

/** Each logged event (one with a seq) as its seq and its kind, to compare what two clients saw. */
function seqAndKind(events: readonly Record<string, unknown>[]): [unknown, string | undefined][] {
  return events.filter((event) => 'seq' in event).map((event) => [event.seq, summarize([event])[0]]);
}

export function describeKilledServer(setup: StoreSetup): void {
  describe(`a server killed with SIGKILL, on ${setup.name}`, { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
    let llm: ScriptedLlmServer;
    let env: Record<string, string>;

    beforeAll(async () => {
      llm = await ScriptedLlmServer.start();
    });
    afterAll(async () => {
      await llm.close();
    });
    // Registered first so that it runs last (vitest runs after-hooks in reverse), once no process is left to ask.
    afterEach(() => {
      llm.requests.length = 0;
    });
    // After each test: its sockets cut, every server process it started killed (also one still
    // starting when the test failed), then its store removed.
    const processes = useServerProcesses();

    async function start(extra: Record<string, string> = {}): Promise<StepwiseProcess> {
      return startStepwiseProcess({ ...env, LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', ...extra });
    }

    async function connect(wsUrl: string, query: Record<string, string | number> = {}): Promise<TestClient> {
      return processes.socket(await TestClient.connect(wsUrl, query));
    }

    async function kill(running: StepwiseProcess): Promise<void> {
      await running.kill();
      expect(await running.exited).toBe('SIGKILL');
    }

    async function prepare() {
      env = await setup.env(processes);
    }

    it('a run killed in the middle of a step finishes by itself after the restart, every completed call made once', async () => {
      await prepare();
      const first = await start();
      let crashed = false;
      llm.respond((request) => {
        const results = request.body.messages.filter((message) => message.role === 'tool').length;
        if (request.phase === 'reason') return { text: reasonText(`Add one to ${results}.`) };
        // The first server dies while step 2's act call is in flight.
        if (request.phase === 'act' && results === 1 && !crashed) return { hang: true };
        if (request.phase === 'act') return { toolCalls: [{ id: `add_${results}`, name: 'calculator', arguments: { expression: `${results}+1` } }] };
        return results >= 3
          ? { text: observeText('Three.', { final_answer: 'Counted to 3.', should_continue: false }) }
          : { text: observeText(`At ${results}.`, { should_continue: true }) };
      });
      const client = await connect(first.wsUrl);
      client.chat('Count to three', { agent_mode: true, agent_max_steps: 5 });
      await llm.waitFor((request) => request.phase === 'act' && request.body.messages.some((message) => message.role === 'tool'), 30_000);
      // Step 2's reasoning is committed as its act request leaves: wait for it to reach the client.
      await client.next((event) => event.update_type === 'agent_reason' && event.step === 2, { timeoutMs: 30_000 });
      const seen = seqAndKind(client.logged);
      const sessionId = String(client.session.session_id);
      crashed = true;
      await kill(first);
      const before = llm.requests.length;

      const second = await start();
      const rejoined = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
      expect(rejoined.session).toMatchObject({ session_id: sessionId, resumed: true });
      const events = await rejoined.untilComplete({ timeoutMs: 30_000 });
      // What the client saw is kept as it was, and the run went on after it, with no event twice.
      expect(seqAndKind(events).slice(0, seen.length)).toEqual(seen);
      expect(summarize(events).filter((name) => name.startsWith('agent_turn_start'))).toEqual([
        'agent_turn_start:1',
        'agent_turn_start:2',
        'agent_turn_start:3',
      ]);
      expect(summarize(events).filter((name) => name === 'agent_start')).toHaveLength(1);
      expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
      expect(events.find((event) => event.type === 'assistant_message')).toMatchObject({ content: 'Counted to 3.' });
      // After the restart only the call in flight (step 2's act) and what followed were made.
      expect(llm.requests.slice(before).map((request) => request.phase)).toEqual(['act', 'observe', 'reason', 'act', 'observe']);
      const seqs = rejoined.logged.map((event) => Number(event.seq));
      expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    });

    it('with RESUME_INTERRUPTED_RUNS=false, closes the interrupted run, keeps every event a client saw, and takes new messages', async () => {
      await prepare();
      const first = await start({ RESUME_INTERRUPTED_RUNS: 'false' });
      llm.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Thinking.') }));
      const client = await connect(first.wsUrl);
      client.chat('Do a slow thing', { agent_mode: true });
      await llm.waitFor((request) => request.phase === 'act', 30_000);
      await client.waitFor('agent_reason');
      const seen = seqAndKind(client.logged);
      const sessionId = String(client.session.session_id);
      await kill(first);

      const second = await start({ RESUME_INTERRUPTED_RUNS: 'false' });
      const rejoined = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
      expect(rejoined.session).toMatchObject({ session_id: sessionId, resumed: true });
      const events = await rejoined.untilComplete();
      expect(seqAndKind(events).slice(0, seen.length)).toEqual(seen);
      expect(summarize(events).slice(-2)).toEqual(['agent_stopped:server_restart', 'response_complete']);
      expect(events.at(-1)!.run_id).toBe(rejoined.logged[0]!.run_id);

      llm.respond(() => ({ text: 'Back again.' }));
      const from = rejoined.events.length;
      rejoined.chat('Are you back?');
      const next = await rejoined.untilComplete({ from });
      expect(summarize(next)).toEqual(['assistant_message', 'response_complete']);
      // The conversation survived: the model sees the earlier question.
      expect(llm.requests.at(-1)!.body.messages.some((message) => message.content === 'Do a slow thing')).toBe(true);
    });

    it('keeps a pending question across the restart, and the answer finishes the run', async () => {
      await prepare();
      const first = await start();
      llm.respond((request) => {
        if (request.phase === 'reason') return { text: reasonText('Need the city.') };
        if (request.phase === 'act') return { toolCalls: [{ id: 'ask_city', name: 'request_input', arguments: { question: 'Which city?' } }] };
        return { text: observeText('Got it.', { final_answer: 'Weather for the city you named.' }) };
      });
      const client = await connect(first.wsUrl);
      client.chat('Weather please', { agent_mode: true });
      const question = await client.waitFor('agent_request_input');
      const sessionId = String(client.session.session_id);
      await kill(first);

      const second = await start();
      const rejoined = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
      const replayed = await rejoined.next((event) => event.seq === question.seq);
      expect(replayed).toMatchObject({ update_type: 'agent_request_input', question: 'Which city?' });

      rejoined.send({ type: 'agent_user_input', content: 'Lisbon' });
      const events = await rejoined.untilComplete();
      expect(summarize(events).slice(-5)).toEqual([
        'tool_complete:request_input',
        'agent_observe:1',
        'assistant_message',
        'agent_completion:answered',
        'response_complete',
      ]);
      const seqs = rejoined.logged.map((event) => Number(event.seq));
      expect(seqs).toEqual(seqs.map((_, index) => index + 1));
      const observe = llm.requests.filter((request) => request.phase === 'observe').at(-1)!;
      expect(observe.body.messages.find((message) => message.role === 'tool')).toMatchObject({ tool_call_id: 'ask_city', content: 'Lisbon' });
    });

    it('keeps a pending approval across the restart (its id and deadline); approved afterwards, the tool runs once', async () => {
      await prepare();
      const first = await start();
      llm.respond((request) => {
        if (request.phase === 'reason') return { text: reasonText('Write it.') };
        if (request.phase === 'act') return { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { name: 'once.txt', content: 'written once' } }] };
        return { text: observeText('Written.', { final_answer: 'Done.' }) };
      });
      const client = await connect(first.wsUrl);
      client.chat('Write once.txt', { agent_mode: true });
      const approval = await client.waitFor('agent_request_input');
      expect(approval).toMatchObject({ kind: 'approval', tool: 'write_file' });
      const sessionId = String(client.session.session_id);
      await kill(first);

      const second = await start();
      const rejoined = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
      const replayed = await rejoined.next((event) => event.seq === approval.seq);
      expect(replayed).toMatchObject({ question_id: approval.question_id, deadline: approval.deadline });
      rejoined.send({ type: 'agent_user_input', question_id: approval.question_id, approval: { decision: 'approve' } });
      const events = await rejoined.untilComplete();
      expect(summarize(events).slice(-3)).toEqual(['assistant_message', 'agent_completion:answered', 'response_complete']);
      expect(events.filter((event) => event.type === 'tool_complete' && event.tool_name === 'write_file')).toHaveLength(1);
      // The approval was asked once, before the restart: nothing asked it again.
      expect(rejoined.logged.filter((event) => event.update_type === 'agent_request_input')).toHaveLength(1);
      const file = await fetch(`${second.url}/api/sessions/${sessionId}/files/once.txt`);
      expect(await file.text()).toBe('written once');
    });

    it('counts the question’s timeout from before the restart', async () => {
      await prepare();
      const first = await start({ AGENT_INPUT_TIMEOUT_MS: '1500', INPUT_TIMEOUT_ACTION: 'stop' });
      llm.respond((request) =>
        request.phase === 'reason'
          ? { text: reasonText('Ask.') }
          : { toolCalls: [{ id: 'ask', name: 'request_input', arguments: { question: 'Anyone there?' } }] },
      );
      const client = await connect(first.wsUrl);
      client.chat('Ask me something', { agent_mode: true });
      const question = await client.waitFor('agent_request_input');
      const sessionId = String(client.session.session_id);
      await kill(first);
      // The second server comes up after the question's deadline (starting it usually takes longer anyway).
      const untilDeadline = Date.parse(String(question.deadline)) - Date.now();
      if (untilDeadline > 0) await new Promise((resolve) => setTimeout(resolve, untilDeadline + 10));

      const second = await start({ AGENT_INPUT_TIMEOUT_MS: '60000', INPUT_TIMEOUT_ACTION: 'stop' });
      const rejoined = await connect(second.wsUrl, { session_id: sessionId, after_seq: 0 });
      const events = await rejoined.untilComplete({ timeoutMs: 30_000 });
      expect(summarize(events).slice(-3)).toEqual(['agent_request_input_timeout:1', 'agent_stopped:input_timeout', 'response_complete']);
    });
  });
}
