import type { SettingsView } from '@stepwise/shared-types';
import { describe, expect, it } from 'vitest';
import { formOf, patchOf } from '../../frontend/src/lib/settings-form.ts';

const app = { kind: 'app' } as const;
const env = (name: string) => ({ kind: 'env', name }) as const;
const view: SettingsView = {
  version: 3,
  provider: 'openai',
  model_endpoint: {
    base_url: { value: 'http://127.0.0.1:1/v1', source: env('OPENAI_BASE_URL'), locked: true },
    api_key: { set: true, source: app, locked: false },
  },
  model: { value: 'chosen', source: app, locked: false },
  models: [],
  prices: [{ key: 'file-model', value: { input: 1, output: 2 }, source: { kind: 'file', name: 'stepwise.config.json' }, locked: true }],
  approval: [{ key: 'calculator', value: 'ask', source: app, locked: false }],
  mcp_servers: [],
  limits: [{ name: 'max_steps', variable: 'AGENT_MAX_STEPS', value: 10, description: '', min: 1, source: { kind: 'default' }, locked: false }],
  changes: [],
};

describe('the settings editor’s form', () => {
  it('starts with what the app sets (never the key), and sends only what changed, a cleared field as null', () => {
    const initial = formOf(view);
    expect(initial).toMatchObject({ baseUrl: '', apiKey: '', model: 'chosen', rules: [{ pattern: 'calculator', policy: 'ask' }], json: { prices: '' } });
    expect(patchOf(initial, initial)).toEqual({ patch: {} });
    const edited = {
      ...initial,
      model: '',
      apiKey: 'sk-new',
      rules: [],
      limits: { max_steps: '4' },
      json: { ...initial.json, prices: '{"m": {"input": 1, "output": 2}}' },
    };
    expect(patchOf(initial, edited)).toEqual({
      patch: { model_endpoint: { api_key: 'sk-new' }, model: null, approval: null, prices: { m: { input: 1, output: 2 } }, limits: { max_steps: 4 } },
    });
  });

  it('names a JSON section that does not parse instead of sending it', () => {
    const initial = formOf(view);
    expect(patchOf(initial, { ...initial, json: { ...initial.json, models: '{"a.*": ' } })).toEqual({
      issues: [{ path: 'models', message: expect.stringContaining('not valid JSON') }],
    });
  });
});
