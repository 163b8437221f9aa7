import { describe, expect, it, vi } from 'vitest';
import { reasonText, ScriptedLlmServer } from '../fixtures/scripted-llm-server.ts';
import { useServerProcesses } from '../helpers/per-test.ts';
import { PROCESS_TEST_TIMEOUT_MS, startStepwiseProcess } from '../helpers/process.ts';
import { summarize, TestClient } from '../helpers/ws-client.ts';

const processes = useServerProcesses();

// The test starts the server process twice on the embedded database, each time opening its data
// folder, which takes seconds on a busy machine.
describe('SIGTERM', { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it('stops active runs with reason shutdown, keeps their end, and exits 0', async () => {
    const llm = processes.open(await ScriptedLlmServer.start());
    llm.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working.') }));
    const dataDir = processes.folder('stepwise-shutdown-');
    // The exit code is the test's subject: give a loaded machine time to stop before the forced exit 1.
    const env = { DATA_DIR: dataDir, LLM_PROVIDER: 'openai', OPENAI_BASE_URL: llm.url, OPENAI_API_KEY: 'k', SHUTDOWN_TIMEOUT_MS: '60000' };
    let running = await startStepwiseProcess(env);
    const client = processes.socket(await TestClient.connect(running.wsUrl));
    client.chat('Long job', { agent_mode: true });
    const act = await llm.waitFor((request) => request.phase === 'act', 30_000);

    running.process.kill('SIGTERM');
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:shutdown', 'response_complete']);
    await llm.waitForAbort(act);
    // The process forces itself out with code 1 after 5 s; 0 means it finished cleanly before.
    expect(await running.exited).toBe(0);
    expect(await client.closed()).toBe(1001);

    // What it logged before exiting is all there after a restart, and nothing is left to recover.
    const sessionId = String(client.session.session_id);
    running = await startStepwiseProcess(env);
    expect(running.output()).not.toMatch(/recovered runs/);
    const detail = await (await fetch(`${running.url}/api/sessions/${sessionId}`)).json();
    expect(detail.runs).toEqual([expect.objectContaining({ status: 'stopped', end_reason: 'shutdown' })]);
    expect(detail.last_seq).toBe(client.logged.at(-1)!.seq);
  });

  it('fails the readiness probe from SIGTERM while the run goes on and is handed over; liveness stays 200 until exit', async () => {
    const llm = processes.open(await ScriptedLlmServer.start());
    llm.respond((request) => (request.phase === 'act' ? { hang: true } : { text: reasonText('Working.') }));
    const dataDir = processes.folder('stepwise-shutdown-');
    // A drain far longer than the test: the second SIGTERM ends it, so nothing here waits on a clock.
    const env = {
      DATA_DIR: dataDir,
      LLM_PROVIDER: 'openai',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'k',
      SHUTDOWN_DRAIN_MS: '600000',
      SHUTDOWN_TIMEOUT_MS: '60000',
    };
    const running = await startStepwiseProcess(env);
    const probe = async (name: 'live' | 'ready') => (await fetch(`${running.url}/api/health/${name}`)).status;
    expect([await probe('live'), await probe('ready')]).toEqual([200, 200]);
    const client = processes.socket(await TestClient.connect(running.wsUrl));
    client.chat('Long job', { agent_mode: true });
    const act = await llm.waitFor((request) => request.phase === 'act', 30_000);

    running.process.kill('SIGTERM');
    await vi.waitFor(async () => expect(await probe('ready')).toBe(503), { timeout: 30_000, interval: 50 });
    expect(await (await fetch(`${running.url}/api/health/ready`)).json()).toEqual({ status: 'draining', dependencies: {} });
    expect(await probe('live')).toBe(200);
    // Still draining: the run has not been stopped, and the server still answers everything else.
    expect(summarize(client.events)).not.toContain('agent_stopped:shutdown');
    expect((await fetch(`${running.url}/api/sessions`)).status).toBe(200);

    running.process.kill('SIGTERM');
    const events = await client.untilComplete();
    expect(summarize(events).slice(-2)).toEqual(['agent_stopped:shutdown', 'response_complete']);
    await llm.waitForAbort(act);
    expect(await running.exited).toBe(0);
    await expect(fetch(`${running.url}/api/health/live`)).rejects.toThrow();
  });
});
