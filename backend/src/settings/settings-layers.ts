import type { SettingSource } from '@stepwise/shared-types';
import { type ApprovalRule, parseApprovalRules } from '../config/approval-rules.ts';
import { type McpServerConfig, type ModelPrice, type ModelRoute, parseEntry, parseModels, parsePrices } from '../config/config-file.ts';
import { type Config, needsStrictAlternation } from '../config/config.ts';
import { type AppSettings, LIMITS, type SettingsPatch } from './settings-document.ts';

/** What the settings amount to once the environment, the config file and the app's are layered: the values the Config takes. */
export interface EffectiveSettings {
  provider: Config['llm']['provider'];
  baseUrl: string | undefined;
  apiKey: string | undefined;
  model: string;
  strictAlternation: boolean;
  models: ModelRoute[];
  prices: Record<string, ModelPrice>;
  approval: ApprovalRule[];
  mcpServers: Record<string, McpServerConfig>;
  limits: Record<string, number | undefined>;
}

/** A problem with a change: where (a dotted path in the PATCH body) and what. */
export interface SettingsIssue {
  path: string;
  message: string;
}

/** How the app's settings are named in messages about them. */
const APP = 'the app settings';

/**
 * The layers of the settings: the environment, then the config file (both read at startup and
 * kept here as the base), then what admins set in the app, then the built-in defaults. A setting
 * the environment or the config file sets is locked. `write` puts the layered values into the
 * Config every module holds, so the next run, call or check reads them.
 */
export class SettingsLayers {
  private readonly base: EffectiveSettings;
  private readonly pinned: ReadonlySet<string>;

  constructor(private readonly config: Config) {
    this.pinned = new Set(config.setVariables ?? []);
    const { llm } = config;
    this.base = structuredClone({
      provider: llm.provider,
      baseUrl: llm.baseUrl,
      apiKey: llm.apiKey,
      model: llm.model,
      strictAlternation: llm.strictAlternation,
      models: llm.models,
      prices: llm.prices,
      approval: config.agent.approval,
      mcpServers: config.mcp.servers,
      limits: Object.fromEntries(LIMITS.map((limit) => [limit.name, limit.read(config)])),
    });
  }

  /** The config file, as a source. */
  private get file(): SettingSource {
    return { kind: 'file', name: this.config.configFile };
  }

  private env(...names: string[]): SettingSource | undefined {
    const name = names.find((candidate) => this.pinned.has(candidate));
    return name === undefined ? undefined : { kind: 'env', name };
  }

  /** What pins the model endpoint's URL and key, if anything: Azure's variables, LLM_PROVIDER=demo, or the variable itself. */
  endpointLock(field: 'base_url' | 'api_key'): SettingSource | undefined {
    if (this.base.provider === 'azure') return this.env('AZURE_OPENAI_ENDPOINT', 'LLM_PROVIDER');
    if (this.base.provider === 'demo' && this.pinned.has('LLM_PROVIDER')) return this.env('LLM_PROVIDER');
    return this.env(field === 'base_url' ? 'OPENAI_BASE_URL' : 'OPENAI_API_KEY');
  }

  modelLock(): SettingSource | undefined {
    return this.env('LLM_MODEL') ?? (this.base.provider === 'azure' ? this.env('AZURE_OPENAI_DEPLOYMENT') : undefined);
  }

  limitLock(name: string): SettingSource | undefined {
    const limit = LIMITS.find((candidate) => candidate.name === name);
    return limit ? this.env(limit.variable) : undefined;
  }

  /** The config file's entries of a keyed section: they are locked. */
  fileKeys(section: 'models' | 'prices' | 'approval' | 'mcp_servers'): string[] {
    switch (section) {
      case 'models':
        return this.base.models.map((route) => route.purpose);
      case 'prices':
        return Object.keys(this.base.prices);
      case 'approval':
        return this.base.approval.map((rule) => rule.pattern);
      case 'mcp_servers':
        return Object.keys(this.base.mcpServers);
    }
  }

  /** The base layer (environment and config file), as read at startup. */
  get baseline(): Readonly<EffectiveSettings> {
    return this.base;
  }

  /** The settings a change touches that the environment or the config file pins, each with what pins it. */
  lockedIn(patch: SettingsPatch): SettingsIssue[] {
    const issues: SettingsIssue[] = [];
    const locked = (path: string, source: SettingSource | undefined) => {
      if (source) issues.push({ path, message: `is set by ${describeSource(source)}, which wins over the app; change it there` });
    };
    for (const field of ['base_url', 'api_key'] as const) {
      if (patch.model_endpoint?.[field] !== undefined) locked(`model_endpoint.${field}`, this.endpointLock(field));
    }
    if (patch.model !== undefined) locked('model', this.modelLock());
    for (const [name, value] of Object.entries(patch.limits ?? {})) if (value !== undefined) locked(`limits.${name}`, this.limitLock(name));
    for (const section of ['models', 'prices', 'approval', 'mcp_servers'] as const) {
      const keys = this.fileKeys(section);
      for (const key of Object.keys(patch[section] ?? {})) if (keys.includes(key)) locked(`${section}.${key}`, this.file);
    }
    return issues;
  }

  /** The settings in force with `app` over the base; throws SettingsIssues when they do not fit together. */
  resolve(app: AppSettings): EffectiveSettings {
    const issues: SettingsIssue[] = [];
    const attempt = <T>(path: string, read: () => T, fallback: T): T => {
      try {
        return read();
      } catch (error) {
        // The config file's parsers throw a ConfigError saying what is wrong.
        if (!(error instanceof Error)) throw error;
        issues.push({ path, message: error.message });
        return fallback;
      }
    };
    const base = this.base;
    const fileKeys = (section: 'models' | 'prices' | 'approval' | 'mcp_servers') => new Set(this.fileKeys(section));
    const own = <T>(section: 'models' | 'prices' | 'approval' | 'mcp_servers', entries: Record<string, T> | undefined) =>
      Object.fromEntries(Object.entries(entries ?? {}).filter(([key]) => !fileKeys(section).has(key)));
    const appModels = attempt('models', () => parseModels({ models: own('models', app.models) }, APP, this.config.llm.endpoints), []);
    const appPrices = attempt('prices', () => parsePrices({ prices: own('prices', app.prices) }, APP), {});
    const appRules = attempt('approval', () => parseApprovalRules(own('approval', app.approval), APP), []);
    const appServers: Record<string, McpServerConfig> = {};
    for (const [name, entry] of Object.entries(own('mcp_servers', app.mcp_servers))) {
      // App entries take literal values: ${NAME} is the config file's way of reading the environment.
      const server = attempt(`mcp_servers.${name}`, () => parseEntry(entry, `mcp_servers.${name} in ${APP}`, {}), undefined);
      if (server) appServers[name] = server;
    }
    const limits = Object.fromEntries(
      LIMITS.map((limit) => [
        limit.name,
        this.limitLock(limit.name) || app.limits?.[limit.name] === undefined ? base.limits[limit.name] : app.limits[limit.name],
      ]),
    );
    if ((limits.max_steps ?? 0) > (limits.max_steps_limit ?? Number.MAX_SAFE_INTEGER)) {
      issues.push({ path: 'limits.max_steps', message: `${limits.max_steps} is above max_steps_limit (${limits.max_steps_limit})` });
    }
    if (issues.length) throw new SettingsIssues(issues);

    const baseUrl = this.endpointLock('base_url') ? base.baseUrl : (app.model_endpoint?.base_url ?? base.baseUrl);
    const apiKey = this.endpointLock('api_key') ? base.apiKey : (app.model_endpoint?.api_key ?? base.apiKey);
    const model = this.modelLock() ? base.model : (app.model ?? base.model);
    // Without LLM_PROVIDER, an endpoint set in the app turns the demo model into a real one.
    const provider = this.pinned.has('LLM_PROVIDER') || base.provider !== 'demo' ? base.provider : baseUrl || apiKey ? 'openai' : 'demo';
    return {
      provider,
      baseUrl,
      apiKey,
      model,
      strictAlternation: this.pinned.has('LLM_STRICT_ALTERNATION') ? base.strictAlternation : needsStrictAlternation(baseUrl ?? '', model),
      models: [...base.models, ...appModels],
      prices: { ...appPrices, ...base.prices },
      approval: [...base.approval, ...appRules],
      mcpServers: { ...base.mcpServers, ...appServers },
      limits,
    };
  }

  /** Puts the settings into the Config every module reads. */
  write(settings: EffectiveSettings): void {
    const { llm } = this.config;
    llm.provider = settings.provider;
    llm.baseUrl = settings.baseUrl;
    llm.apiKey = settings.apiKey;
    llm.model = settings.model;
    llm.strictAlternation = settings.strictAlternation;
    llm.models = settings.models;
    llm.prices = settings.prices;
    this.config.agent.approval = settings.approval;
    this.config.mcp.servers = settings.mcpServers;
    for (const limit of LIMITS) limit.write(this.config, settings.limits[limit.name]);
  }
}

/** A change that does not fit: every problem, each with where it is. */
export class SettingsIssues extends Error {
  constructor(readonly issues: SettingsIssue[]) {
    super(issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '));
    this.name = 'SettingsIssues';
  }
}

/** A source as a sentence names it. */
export function describeSource(source: SettingSource): string {
  switch (source.kind) {
    case 'env':
      return `the environment variable ${source.name}`;
    case 'file':
      return `the config file ${source.name}`;
    case 'app':
      return 'an admin in the app';
    case 'default':
      return 'the built-in default';
  }
}

/** A change of settings the environment or the config file pins: refused, nothing changed. */
export class SettingsLocked extends Error {
  constructor(readonly issues: SettingsIssue[]) {
    super(`Locked: ${issues.map((issue) => `${issue.path} ${issue.message}`).join('; ')}`);
    this.name = 'SettingsLocked';
  }
}
