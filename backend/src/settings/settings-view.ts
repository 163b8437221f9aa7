import type { McpServerStatus, SettingChangeItem, SettingSource, SettingsChange, SettingsView } from '@stepwise/shared-types';
import type { McpServerConfig, ModelRoute } from '../config/config-file.ts';
import type { Config } from '../config/config.ts';
import { type AppSettings, LIMITS, maskedServer } from './settings-document.ts';
import type { SettingsLayers } from './settings-layers.ts';

const APP: SettingSource = { kind: 'app' };
const DEFAULT: SettingSource = { kind: 'default' };

/** What `GET /api/settings` answers: the settings in force here, each with its source; no secret's value. */
export function settingsView(
  config: Config,
  layers: SettingsLayers,
  app: AppSettings,
  state: { version: number; mcp: McpServerStatus[]; changes: SettingsChange[] },
): SettingsView {
  const { llm } = config;
  const base = layers.baseline;
  const scalar = (lock: SettingSource | undefined, fromApp: boolean) => ({ source: lock ?? (fromApp ? APP : DEFAULT), locked: lock !== undefined });
  const file: SettingSource = { kind: 'file', name: config.configFile };
  const keyed = <T>(fileEntries: Array<[string, T]>, appEntries: Array<[string, T]>) => {
    const fileKeys = new Set(fileEntries.map(([key]) => key));
    return [
      ...fileEntries.map(([key, value]) => ({ key, value, source: file, locked: true })),
      ...appEntries.filter(([key]) => !fileKeys.has(key)).map(([key, value]) => ({ key, value, source: APP, locked: false })),
    ];
  };
  const live = new Map(state.mcp.map((server) => [server.name, server]));
  const baseUrlLock = layers.endpointLock('base_url');
  const keyLock = layers.endpointLock('api_key');
  return {
    version: state.version,
    provider: llm.provider,
    model_endpoint: {
      base_url: { value: withoutCredentials(llm.azure?.endpoint ?? llm.baseUrl) ?? null, ...scalar(baseUrlLock, app.model_endpoint?.base_url !== undefined) },
      api_key: { set: Boolean(llm.azure ? llm.azure.apiKey : llm.apiKey), ...scalar(keyLock, app.model_endpoint?.api_key !== undefined) },
    },
    model: { value: llm.model, ...scalar(layers.modelLock(), app.model !== undefined) },
    models: keyed(
      base.models.map((route) => [route.purpose, routeShown(route)]),
      Object.entries(app.models ?? {}),
    ),
    prices: keyed(
      Object.entries(base.prices).map(([model, price]) => [
        model,
        { input: price.input, output: price.output, ...(price.cachedInput === undefined ? {} : { cached_input: price.cachedInput }) },
      ]),
      Object.entries(app.prices ?? {}),
    ),
    approval: keyed(
      base.approval.map((rule) => [rule.pattern, rule.policy]),
      Object.entries(app.approval ?? {}),
    ),
    mcp_servers: keyed<Record<string, unknown>>(
      Object.entries(base.mcpServers).map(([name, server]) => [name, maskedServer(serverShown(server))]),
      Object.entries(app.mcp_servers ?? {}).map(([name, server]) => [name, maskedServer(server)]),
    ).map((entry) => {
      const status = live.get(entry.key);
      return status ? { ...entry, live: { status: status.status, tools: status.tools, ...(status.error ? { error: status.error } : {}) } } : entry;
    }),
    limits: LIMITS.map((limit) => {
      const lock = layers.limitLock(limit.name);
      return {
        name: limit.name,
        variable: limit.variable,
        value: limit.read(config) ?? null,
        description: limit.description,
        min: limit.min,
        ...(limit.decimal ? { decimal: true } : {}),
        ...scalar(lock, app.limits?.[limit.name] !== undefined),
      };
    }),
    changes: state.changes,
  };
}

/** A config file's route as the app writes one: `{model, endpoint?, params?, vision?}`, or a list with its fallbacks. */
function routeShown(route: ModelRoute): unknown {
  const target = (each: Omit<ModelRoute, 'purpose' | 'fallbacks'>) => ({
    model: each.model,
    ...(each.endpoint ? { endpoint: each.endpoint } : {}),
    ...(Object.keys(each.params).length ? { params: each.params } : {}),
    ...(each.vision === undefined ? {} : { vision: each.vision }),
  });
  return route.fallbacks?.length ? [target(route), ...route.fallbacks.map(target)] : target(route);
}

/** A config file's MCP server as its entry reads (its values expanded). */
function serverShown(server: McpServerConfig): Record<string, unknown> {
  return server.transport === 'stdio'
    ? { command: server.command, args: server.args, env: server.env, ...(server.cwd ? { cwd: server.cwd } : {}) }
    : { url: server.url, headers: server.headers };
}

/** The settings whose stored values differ, before and after; secrets only as set or not, MCP header and env values masked. */
export function changedSettings(before: AppSettings, after: AppSettings): SettingChangeItem[] {
  const items: SettingChangeItem[] = [];
  const text = (value: unknown) => (value === undefined ? null : typeof value === 'string' ? value : JSON.stringify(value));
  const compare = (setting: string, old: unknown, next: unknown) => {
    if (JSON.stringify(old) !== JSON.stringify(next)) items.push({ setting, before: text(old), after: text(next) });
  };
  compare('model_endpoint.base_url', withoutCredentials(before.model_endpoint?.base_url), withoutCredentials(after.model_endpoint?.base_url));
  const oldKey = before.model_endpoint?.api_key;
  const newKey = after.model_endpoint?.api_key;
  if (oldKey !== newKey) {
    items.push({ setting: 'model_endpoint.api_key', before: oldKey ? 'set' : 'not set', after: newKey ? (oldKey ? 'replaced' : 'set') : 'not set' });
  }
  compare('model', before.model, after.model);
  const mask = (section: string, value: unknown) => (section === 'mcp_servers' && value ? maskedServer(value as object) : value);
  for (const section of ['models', 'prices', 'approval', 'mcp_servers'] as const) {
    const old = (before[section] ?? {}) as Record<string, unknown>;
    const next = (after[section] ?? {}) as Record<string, unknown>;
    const count = items.length;
    for (const key of new Set([...Object.keys(old), ...Object.keys(next)])) {
      const shownBefore = mask(section, old[key]);
      const shownAfter = mask(section, next[key]);
      const secretOnly = JSON.stringify(shownBefore) === JSON.stringify(shownAfter) && JSON.stringify(old[key]) !== JSON.stringify(next[key]);
      if (secretOnly) items.push({ setting: `${section}.${key}`, before: text(shownBefore), after: `${text(shownAfter)} (a secret value changed)` });
      else compare(`${section}.${key}`, shownBefore, shownAfter);
    }
    // The same entries in another order: the order is what changed (the first match wins).
    if (items.length === count && JSON.stringify(Object.keys(old)) !== JSON.stringify(Object.keys(next))) {
      items.push({ setting: `${section} (order)`, before: Object.keys(old).join(', '), after: Object.keys(next).join(', ') });
    }
  }
  for (const limit of LIMITS) compare(`limits.${limit.name}`, before.limits?.[limit.name], after.limits?.[limit.name]);
  return items;
}

/** A URL as shown: a user name and password in it (http://user:secret@host) are left out. */
function withoutCredentials(url: string | undefined): string | undefined {
  if (url === undefined || !URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (!parsed.username && !parsed.password) return url;
  parsed.username = '';
  parsed.password = '';
  return parsed.toString();
}
