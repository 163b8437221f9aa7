import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch, changedSettings, configFromEnv, SettingsIssues, SettingsLayers, SettingsPatch } from '@stepwise/backend';
import { SECRET_MASK } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';

/** A Config as the server reads it, with a config file of these entries. */
function configWith(file: Record<string, unknown>, env: Record<string, string> = {}) {
  const path = join(mkdtempSync(join(tmpdir(), 'stepwise-settings-')), 'stepwise.config.json');
  writeFileSync(path, JSON.stringify(file));
  return configFromEnv({ STEPWISE_CONFIG: path, ...env });
}

describe('settings changed in the app', () => {
  it('locks what the config file and the environment set, and puts the app’s entries after the file’s', () => {
    const config = configWith({ approval: { 'files__*': 'ask' }, models: { 'research.*': 'file-model' } }, { AGENT_MAX_STEPS: '4' });
    const layers = new SettingsLayers(config);
    const issues = layers.lockedIn(SettingsPatch.parse({ approval: { 'files__*': 'auto', calculator: 'ask' }, limits: { max_steps: 5, run_token_budget: 9 } }));
    expect(issues).toEqual([
      { path: 'limits.max_steps', message: expect.stringContaining('AGENT_MAX_STEPS') },
      { path: 'approval.files__*', message: expect.stringContaining(config.configFile) },
    ]);
    layers.write(layers.resolve({ approval: { calculator: 'ask' }, models: { 'solver.*': 'app-model' }, model: 'chosen' }));
    expect(config.agent.approval).toEqual([
      { pattern: 'files__*', policy: 'ask' },
      { pattern: 'calculator', policy: 'ask' },
    ]);
    expect(config.llm.models.map((route) => [route.purpose, route.model])).toEqual([
      ['research.*', 'file-model'],
      ['solver.*', 'app-model'],
    ]);
    expect(config.llm.model).toBe('chosen');
    // Cleared in the app: the base holds again.
    layers.write(layers.resolve({}));
    expect(config.llm.model).toBe('gpt-4o-mini');
    expect(config.agent.approval).toEqual([{ pattern: 'files__*', policy: 'ask' }]);
  });

  it('refuses settings that do not fit together, every problem named', () => {
    const layers = new SettingsLayers(configWith({}));
    const attempt = () =>
      layers.resolve({
        models: { 'a.*': { model: 'm', endpoint: 'nowhere', params: {} } },
        limits: { max_steps: 80 },
        mcp_servers: { bad: { url: 'ftp://x', headers: {} } },
      });
    expect(attempt).toThrow(SettingsIssues);
    try {
      attempt();
    } catch (error) {
      expect((error as SettingsIssues).issues.map((issue) => issue.path)).toEqual(['models', 'mcp_servers.bad', 'limits.max_steps']);
    }
  });

  it('changes the endpoint and limits field by field, replaces a section whole, clears with null, and keeps masked secrets', () => {
    const stored = {
      model_endpoint: { base_url: 'http://127.0.0.1:1/v1', api_key: 'sk-old' },
      limits: { max_steps: 4, run_token_budget: 100 },
      mcp_servers: { remote: { url: 'http://127.0.0.1:2/mcp', headers: { Authorization: 'Bearer old-token' } } },
    };
    const next = applyPatch(
      stored,
      SettingsPatch.parse({
        model_endpoint: { api_key: null },
        limits: { max_steps: null },
        mcp_servers: { remote: { url: 'http://127.0.0.1:3/mcp', headers: { Authorization: SECRET_MASK } } },
      }),
    );
    expect(next).toEqual({
      model_endpoint: { base_url: 'http://127.0.0.1:1/v1' },
      limits: { run_token_budget: 100 },
      mcp_servers: { remote: { url: 'http://127.0.0.1:3/mcp', headers: { Authorization: 'Bearer old-token' } } },
    });
    const record = JSON.stringify(changedSettings(stored, next));
    expect(record).toContain('model_endpoint.api_key');
    for (const secret of ['sk-old', 'old-token']) expect(record).not.toContain(secret);
  });
});
