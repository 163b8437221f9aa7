import type { SettingsView } from '@stepwise/shared-types';

/** The keyed sections edited as JSON objects: their order matters (the first match wins). */
export const JSON_SECTIONS = ['models', 'prices', 'mcp_servers'] as const;
export type JsonSection = (typeof JSON_SECTIONS)[number];

/** One approval rule the app sets, as its row in the form. */
export interface RuleRow {
  pattern: string;
  policy: SettingsView['approval'][number]['value'];
}

/**
 * The editor's fields: only what the app itself sets (a setting in force from elsewhere shows as
 * the field's placeholder). The API key is write-only: its field starts empty, always.
 */
export interface SettingsForm {
  baseUrl: string;
  apiKey: string;
  clearApiKey: boolean;
  model: string;
  rules: RuleRow[];
  json: Record<JsonSection, string>;
  limits: Record<string, string>;
}

const appOnly = <T extends { source: { kind: string } }>(entries: T[]) => entries.filter((entry) => entry.source.kind === 'app');

/** The form for the settings as the server shows them. */
export function formOf(view: SettingsView): SettingsForm {
  const fromApp = (setting: { value: unknown; source: { kind: string } }) =>
    setting.source.kind === 'app' && setting.value !== null ? String(setting.value) : '';
  const object = (entries: Array<{ key: string; value: unknown; source: { kind: string } }>) => {
    const own = appOnly(entries);
    return own.length ? JSON.stringify(Object.fromEntries(own.map((entry) => [entry.key, entry.value])), null, 2) : '';
  };
  return {
    baseUrl: fromApp(view.model_endpoint.base_url),
    apiKey: '',
    clearApiKey: false,
    model: fromApp(view.model),
    rules: appOnly(view.approval).map((entry) => ({ pattern: entry.key, policy: entry.value })),
    json: { models: object(view.models), prices: object(view.prices), mcp_servers: object(view.mcp_servers) },
    limits: Object.fromEntries(view.limits.map((limit) => [limit.name, fromApp(limit)])),
  };
}

/** A problem the form finds before anything is sent, as the server words its own. */
export interface FormIssue {
  path: string;
  message: string;
}

/**
 * The PATCH body of what the form changed from `initial`: only the fields that differ, a cleared
 * field as null (the environment's, the config file's or the built-in value holds again). Issues
 * instead when a JSON section does not parse.
 */
export function patchOf(initial: SettingsForm, form: SettingsForm): { patch: Record<string, unknown> } | { issues: FormIssue[] } {
  const patch: Record<string, unknown> = {};
  const issues: FormIssue[] = [];
  const text = (value: string) => (value.trim() === '' ? null : value.trim());
  const endpoint: Record<string, unknown> = {};
  if (form.baseUrl.trim() !== initial.baseUrl) endpoint.base_url = text(form.baseUrl);
  if (form.clearApiKey) endpoint.api_key = null;
  else if (form.apiKey.trim()) endpoint.api_key = form.apiKey.trim();
  if (Object.keys(endpoint).length) patch.model_endpoint = endpoint;
  if (form.model.trim() !== initial.model) patch.model = text(form.model);
  const rules = (rows: RuleRow[]) => rows.filter((row) => row.pattern.trim()).map((row) => [row.pattern.trim(), row.policy] as const);
  if (JSON.stringify(rules(form.rules)) !== JSON.stringify(rules(initial.rules))) {
    const kept = rules(form.rules);
    patch.approval = kept.length ? Object.fromEntries(kept) : null;
  }
  for (const section of JSON_SECTIONS) {
    const value = form.json[section].trim();
    if (value === initial.json[section].trim()) continue;
    if (value === '') {
      patch[section] = null;
      continue;
    }
    try {
      const parsed = JSON.parse(value) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) issues.push({ path: section, message: 'must be a JSON object' });
      else patch[section] = Object.keys(parsed).length ? parsed : null;
    } catch (error) {
      issues.push({ path: section, message: `is not valid JSON (${(error as Error).message})` });
    }
  }
  const limits: Record<string, number | null> = {};
  for (const [name, value] of Object.entries(form.limits)) {
    if (value.trim() === (initial.limits[name] ?? '')) continue;
    if (value.trim() === '') limits[name] = null;
    else if (Number.isFinite(Number(value))) limits[name] = Number(value);
    else issues.push({ path: `limits.${name}`, message: 'must be a number' });
  }
  if (Object.keys(limits).length) patch.limits = limits;
  return issues.length ? { issues } : { patch };
}

/** Where a setting's value in force comes from, in words. */
export function sourceLabel(source: { kind: string; name?: string | undefined }): string {
  switch (source.kind) {
    case 'env':
      return `environment: ${source.name}`;
    case 'file':
      return `config file: ${source.name}`;
    case 'app':
      return 'set in the app';
    default:
      return 'default';
  }
}
