import { ConfigError, ENVIRONMENT_VARIABLES, loadConfig } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

const load = (env: Record<string, string>) => loadConfig(env, { promptsDir: '/prompts' });

describe('the configuration', () => {
  it('has defaults that run the demo model locally', () => {
    const config = load({});
    expect(config).toMatchObject({
      port: 8787,
      host: '127.0.0.1',
      llm: { provider: 'demo', model: 'gpt-4o-mini', streaming: true },
      agent: { maxStepsDefault: 10, maxStepsLimit: 50, inputTimeoutMs: 300_000 },
      dataDir: './data',
      configFile: './stepwise.config.json',
      prompts: { dir: '/prompts' },
    });
    expect(config.access).toEqual({ authToken: undefined, allowedOrigins: undefined, publicOrigin: undefined, allowedHosts: [] });
  });

  it('uses the openai provider when a key or a base URL is given', () => {
    expect(load({ OPENAI_API_KEY: 'sk-x' }).llm.provider).toBe('openai');
    expect(load({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }).llm).toMatchObject({
      provider: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
    });
    expect(load({ OPENAI_API_KEY: 'sk-x', LLM_PROVIDER: 'demo' }).llm.provider).toBe('demo');
  });

  it('reads every variable of the protocol', () => {
    const config = load({
      PORT: '9000',
      HOST: '0.0.0.0',
      LLM_MODEL: 'llama3',
      AGENT_MAX_STEPS: '4',
      AGENT_MAX_STEPS_LIMIT: '8',
      AGENT_INPUT_TIMEOUT_MS: '1000',
      DATA_DIR: '/var/lib/stepwise',
      STEPWISE_CONFIG: '/etc/stepwise.json',
      AUTH_TOKEN: 'secret-token-0123456789',
      ALLOWED_ORIGINS: 'https://a.example, https://b.example',
    });
    expect(config).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      llm: { model: 'llama3' },
      agent: { maxStepsDefault: 4, maxStepsLimit: 8, inputTimeoutMs: 1000 },
      dataDir: '/var/lib/stepwise',
      configFile: '/etc/stepwise.json',
      access: { authToken: 'secret-token-0123456789', allowedOrigins: ['https://a.example', 'https://b.example'] },
    });
  });

  it('lowers the built-in default max steps to a lower limit', () => {
    expect(load({ AGENT_MAX_STEPS_LIMIT: '3' }).agent.maxStepsDefault).toBe(3);
  });

  it.each([
    [{ PORT: 'eighty' }, /^Invalid PORT: must be an integer \(got "eighty"\)$/],
    [{ PORT: '70000' }, /^Invalid PORT: must be at most 65535/],
    [{ LLM_PROVIDER: 'anthropic' }, /^Invalid LLM_PROVIDER:/],
    [{ OPENAI_BASE_URL: 'not a url' }, /^Invalid OPENAI_BASE_URL: must be an http\(s\) URL/],
    [{ AGENT_MAX_STEPS: '0' }, /^Invalid AGENT_MAX_STEPS: must be at least 1/],
    [{ AGENT_MAX_STEPS: '20', AGENT_MAX_STEPS_LIMIT: '10' }, /^Invalid AGENT_MAX_STEPS: 20 is above AGENT_MAX_STEPS_LIMIT \(10\)$/],
    [{ AGENT_INPUT_TIMEOUT_MS: '-5' }, /^Invalid AGENT_INPUT_TIMEOUT_MS:/],
    [{ ALLOWED_ORIGINS: 'example.com' }, /^Invalid ALLOWED_ORIGINS:/],
    [{ LLM_STREAMING: 'sometimes' }, /^Invalid LLM_STREAMING:/],
  ])('stops on %j with one line naming the variable', (env, message) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(message);
  });

  it('names a bad variable before settings that do not fit together, and lists each variable once', () => {
    expect(() => load({ REDIS_URL: 'redis://cache:6379' })).toThrow(/^Invalid REDIS_URL: several instances share PostgreSQL too/);
    expect(() => load({ REDIS_URL: 'redis://cache:6379', VAPID_SUBJECT: 'nobody' })).toThrow(
      /^Invalid VAPID_SUBJECT: must be a mailto: address or an https: URL \(got "nobody"\)$/,
    );
    expect(new Set(ENVIRONMENT_VARIABLES).size).toBe(ENVIRONMENT_VARIABLES.length);
  });

  it('never repeats a secret in its error', () => {
    expect(() => load({ AUTH_TOKEN: 'short-secret' })).toThrow(/^Invalid AUTH_TOKEN: must be at least 16 characters$/);
    expect(() => load({ AUTH_TOKEN: 'a secret with spaces in it' })).toThrow(/^Invalid AUTH_TOKEN: may hold only letters/);
    expect(() => load({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).toThrow(/^Invalid DATABASE_URL: must be a postgres:\/\/ URL$/);
  });

  it('reads the limits', () => {
    expect(load({ MAX_MESSAGES_PER_SECOND: '7', MAX_CONCURRENT_RUNS: '3', AGENT_RUN_TIMEOUT_MS: '1000' })).toMatchObject({
      limits: { messagesPerSecond: 7, socketsPerAddress: 20, concurrentRuns: 3 },
      agent: { runTimeoutMs: 1000, runTokenBudget: 0, contextBudgetChars: 60_000 },
    });
  });

  it('runs on Restate only with its ingress and admin URLs, the workflow endpoint on loopback unless told otherwise', () => {
    expect(load({}).restate).toBeUndefined();
    expect(() => load({ RUN_ENGINE: 'restate' })).toThrow(
      'Invalid RUN_ENGINE: restate needs RESTATE_INGRESS_URL and RESTATE_ADMIN_URL (missing: RESTATE_INGRESS_URL, RESTATE_ADMIN_URL)',
    );
    expect(() => load({ RUN_ENGINE: 'temporal' })).toThrow('Invalid RUN_ENGINE: must be in-process or restate');
    const urls = { RUN_ENGINE: 'restate', RESTATE_INGRESS_URL: 'http://restate:8080/', RESTATE_ADMIN_URL: 'http://restate:9070' };
    expect(load({ ...urls, HOST: '0.0.0.0' }).restate).toEqual({
      ingressUrl: 'http://restate:8080',
      adminUrl: 'http://restate:9070',
      servicePort: 9080,
      serviceHost: '127.0.0.1',
      serviceUrl: 'http://127.0.0.1:9080',
      identityKeys: [],
    });
    const key = 'publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp';
    expect(
      load({ ...urls, RESTATE_SERVICE_HOST: '0.0.0.0', RESTATE_SERVICE_URL: 'http://web-1:9080', RESTATE_IDENTITY_KEYS: ` ${key} ` }).restate,
    ).toMatchObject({ serviceHost: '0.0.0.0', serviceUrl: 'http://web-1:9080', identityKeys: [key] });
    expect(() => load({ ...urls, RESTATE_IDENTITY_KEYS: 'not-a-key' })).toThrow('Invalid RESTATE_IDENTITY_KEYS');
  });

  it('reads Azure OpenAI: the provider from its endpoint, the deployment as the model unless LLM_MODEL is set', () => {
    const azure = {
      AZURE_OPENAI_ENDPOINT: 'https://team.openai.azure.com',
      AZURE_OPENAI_API_KEY: 'k',
      AZURE_OPENAI_DEPLOYMENT: 'gpt4o-prod',
      OPENAI_API_VERSION: '2024-10-21',
    };
    expect(load(azure).llm).toMatchObject({
      provider: 'azure',
      model: 'gpt4o-prod',
      azure: { endpoint: 'https://team.openai.azure.com', apiKey: 'k', deployment: 'gpt4o-prod', apiVersion: '2024-10-21' },
    });
    expect(load({ ...azure, LLM_MODEL: 'other' }).llm.model).toBe('other');
    expect(() => load({ LLM_PROVIDER: 'azure', OPENAI_API_VERSION: 'v' })).toThrow(/^Invalid LLM_PROVIDER: azure needs .*\(missing: AZURE_OPENAI_ENDPOINT\)/);
  });

  it('reads LLM_PARAMS as a JSON object, and refuses anything else naming the variable', () => {
    expect(load({ LLM_PARAMS: '{"reasoning_effort":"low","max_completion_tokens":4000}' }).llm.params).toEqual({
      reasoning_effort: 'low',
      max_completion_tokens: 4000,
    });
    expect(load({}).llm.params).toEqual({});
    for (const bad of ['{reasoning_effort: low}', '"low"', '[1]', 'null']) {
      expect(() => load({ LLM_PARAMS: bad })).toThrow(/^Invalid LLM_PARAMS: must be a JSON object/);
    }
  });

  it('reads the proxy variables, lower-case too, and never repeats a bad proxy URL (it may hold a password)', () => {
    expect(load({ https_proxy: 'http://proxy:3128', NO_PROXY: 'localhost,.internal' }).llm.proxy).toEqual({
      httpsProxy: 'http://proxy:3128',
      httpProxy: undefined,
      noProxy: 'localhost,.internal',
    });
    expect(() => load({ HTTPS_PROXY: 'user:secret@proxy' })).toThrow(/^Invalid HTTPS_PROXY: must be an http\(s\) URL$/);
  });
});
