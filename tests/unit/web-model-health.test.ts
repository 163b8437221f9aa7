import { describe, expect, it } from 'vitest';
import { parseServerEvent } from '../../frontend/src/lib/socket-client.ts';
import { healthSummary } from '../../frontend/src/lib/model-health.ts';
import { changeSnippets, configFilePath, MCP_CONFIG_SNIPPET, settingsOrLimits } from '../../frontend/src/lib/settings-snippets.ts';
import { reduce } from '../../frontend/src/state/reducer.ts';
import { initialViewState, type ViewState } from '../../frontend/src/state/view-state.ts';
import { sessionMessage } from '../helpers/web-session.ts';

const session = sessionMessage({ model: 'llama3.1' });
const failing = {
  status: 'failing',
  message: 'connection refused at http://127.0.0.1:9/v1',
  hint: 'check OPENAI_BASE_URL',
  checked_at: '2026-01-01T00:00:00.000Z',
};

/** Every frame goes through the socket client's parser first, as in the app. */
const receive = (state: ViewState, ...frames: Record<string, unknown>[]) =>
  frames.reduce((next, frame) => {
    const event = parseServerEvent(JSON.stringify(frame));
    return event ? reduce(next, { kind: 'server_event', event }) : next;
  }, state);

describe('the model’s health in the web app', () => {
  it('takes the health the session reports, and every live model_health event after it', () => {
    let state = receive(initialViewState, { ...session, model_endpoint: 'http://127.0.0.1:9/v1', model_health: { status: 'unknown' } });
    expect(healthSummary(state.session)).toEqual({ status: 'unknown', label: 'Not checked yet' });
    state = receive(state, { type: 'model_health', health: failing });
    expect(state.session?.model_health).toEqual(failing);
    expect(healthSummary(state.session)).toEqual({
      status: 'failing',
      label: 'Model unreachable',
      message: 'connection refused at http://127.0.0.1:9/v1',
      hint: 'check OPENAI_BASE_URL',
      checkedAt: '2026-01-01T00:00:00.000Z',
    });
    state = receive(state, { type: 'model_health', health: { status: 'ok', checked_at: '2026-01-01T00:01:00.000Z' } });
    expect(healthSummary(state.session)).toEqual({ status: 'ok', label: 'Model working', checkedAt: '2026-01-01T00:01:00.000Z' });
    // The rest of the session stays as it was; model_health is not part of the log.
    expect(state.session).toMatchObject({ model: 'llama3.1', model_endpoint: 'http://127.0.0.1:9/v1' });
    expect(state.lastSeq).toBe(0);
  });

  it('ignores a health event before any session, and a malformed one', () => {
    expect(receive(initialViewState, { type: 'model_health', health: failing })).toBe(initialViewState);
    const state = receive(initialViewState, session);
    expect(receive(state, { type: 'model_health', health: { status: 'on fire' } })).toBe(state);
  });

  it('keeps the health a resumed session reports after a reconnect', () => {
    let state = receive(initialViewState, { ...session, model_health: failing });
    state = receive(state, { ...session, resumed: true, last_seq: 0, model_health: { status: 'ok' } });
    expect(healthSummary(state.session).status).toBe('ok');
  });

  it('reads a server that reports no health as not checked, and the demo as always there', () => {
    expect(healthSummary(undefined)).toEqual({ status: 'unknown', label: 'Not checked yet' });
    const demo = receive(initialViewState, { ...session, model: 'Demo model (offline)', demo: true });
    expect(healthSummary(demo.session)).toEqual({ status: 'unknown', label: 'Built in, always available' });
  });
});

describe('the settings panel’s snippets', () => {
  it('uses the variable names the server lists, and PROTOCOL.md’s without a list', () => {
    const listed = [
      { name: 'OPENAI_MODEL', value: 'x', description: '' },
      { name: 'AGENT_MAX_STEPS', value: '10', description: '' },
    ];
    expect(changeSnippets(listed).map((snippet) => snippet.command)).toEqual([
      'OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.1 npx -y pnpm@10 start',
      'OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4o-mini npx -y pnpm@10 start',
      'AGENT_MAX_STEPS=20 npx -y pnpm@10 start',
    ]);
    expect(changeSnippets(undefined).map((snippet) => snippet.command)).toEqual([
      'OPENAI_BASE_URL=http://localhost:11434/v1 LLM_MODEL=llama3.1 npx -y pnpm@10 start',
      'OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… LLM_MODEL=gpt-4o-mini npx -y pnpm@10 start',
      'AGENT_MAX_STEPS=20 AGENT_MAX_STEPS_LIMIT=50 npx -y pnpm@10 start',
    ]);
  });

  it('finds the config file and the limits with or without the server’s settings', () => {
    const bare = receive(initialViewState, session).session;
    expect(configFilePath(bare)).toBe('./stepwise.config.json');
    expect(settingsOrLimits(bare).map((setting) => `${setting.name}=${setting.value}`)).toEqual(['AGENT_MAX_STEPS=4', 'AGENT_MAX_STEPS_LIMIT=8']);
    const full = receive(initialViewState, {
      ...session,
      config_file: '/etc/stepwise.json',
      settings: [{ name: 'MAX_CONCURRENT_RUNS', value: '8', description: 'Runs the server does at once' }],
    }).session;
    expect(configFilePath(full)).toBe('/etc/stepwise.json');
    expect(settingsOrLimits(full).map((setting) => setting.name)).toEqual(['MAX_CONCURRENT_RUNS']);
    expect(JSON.parse(MCP_CONFIG_SNIPPET)).toEqual({ mcpServers: { NAME: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] } } });
  });
});
