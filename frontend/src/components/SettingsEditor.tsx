import type { SettingSource, SettingsView } from '@stepwise/shared-types';
import { type FormEvent, type ReactNode, useEffect, useId, useState } from 'react';
import { SettingsRefused, settingsApi } from '../lib/api.ts';
import { type FormIssue, formOf, type JsonSection, patchOf, type RuleRow, type SettingsForm, sourceLabel } from '../lib/settings-form.ts';
import { SettingsHistory } from './SettingsHistory.tsx';

const JSON_LABELS: Record<JsonSection, { label: string; example: string }> = {
  models: { label: 'Models by purpose', example: '{"research.*": "gpt-4.1-mini"}' },
  prices: { label: 'Prices (USD per million tokens)', example: '{"my-model": {"input": 0.5, "output": 1.5}}' },
  mcp_servers: { label: 'MCP servers', example: '{"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}' },
};

/**
 * The admin's editor of the settings the app may change. What the environment or the config file
 * sets is shown locked, with its source. The API key is write-only. A change holds at once on
 * every instance; the server's checks come back as a list, each naming its field.
 */
export function SettingsEditor({ now }: { now: Date }) {
  const [view, setView] = useState<SettingsView>();
  const [initial, setInitial] = useState<SettingsForm>();
  const [form, setForm] = useState<SettingsForm>();
  const [issues, setIssues] = useState<FormIssue[]>([]);
  const [problem, setProblem] = useState<string>();
  const [saved, setSaved] = useState<string>();
  const [saving, setSaving] = useState(false);

  const show = (next: SettingsView) => {
    setView(next);
    const fields = formOf(next);
    setInitial(fields);
    setForm(fields);
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: loads once, when the dialog opens
  useEffect(() => {
    settingsApi.get().then(show, (error: Error) => setProblem(error.message));
  }, []);

  if (problem && !view) return <p className="settings-problem">{problem}</p>;
  if (!view || !form || !initial) return <p className="muted">Loading the settings…</p>;

  const update = (change: Partial<SettingsForm>) => {
    setForm({ ...form, ...change });
    setSaved(undefined);
  };
  const invalid = (path: string) => issues.some((issue) => issue.path === path || issue.path.startsWith(`${path}.`));
  const save = async (event: FormEvent) => {
    event.preventDefault();
    const built = patchOf(initial, form);
    if ('issues' in built) return setIssues(built.issues);
    if (Object.keys(built.patch).length === 0) return setSaved('Nothing to save: no field was changed.');
    setSaving(true);
    try {
      const next = await settingsApi.change(built.patch);
      show(next);
      setIssues([]);
      setProblem(undefined);
      setSaved(`Saved. Version ${next.version} holds on every instance from the next run on.`);
    } catch (error) {
      setIssues(error instanceof SettingsRefused && error.issues.length ? error.issues : [{ path: 'settings', message: (error as Error).message }]);
    } finally {
      setSaving(false);
    }
  };
  const endpoint = view.model_endpoint;
  const rules = form.rules;
  const setRule = (index: number, row: RuleRow | undefined) =>
    update({ rules: row ? rules.map((each, at) => (at === index ? row : each)) : rules.filter((_, at) => at !== index) });

  return (
    <form className="settings-editor" aria-label="Change settings" onSubmit={(event) => void save(event)} noValidate>
      <p className="muted">
        Changes hold at once on every instance, with no restart. A setting an environment variable or the config file sets is locked here: change it there.
      </p>
      <fieldset>
        <legend>Model</legend>
        <Field label="Endpoint URL" source={endpoint.base_url.source} locked={endpoint.base_url.locked} invalid={invalid('model_endpoint.base_url')}>
          {(id) => (
            <input
              id={id}
              type="url"
              value={endpoint.base_url.locked ? (endpoint.base_url.value ?? '') : form.baseUrl}
              placeholder={endpoint.base_url.value ?? 'https://api.openai.com/v1'}
              disabled={endpoint.base_url.locked}
              onChange={(event) => update({ baseUrl: event.target.value })}
            />
          )}
        </Field>
        <Field label="API key" source={endpoint.api_key.source} locked={endpoint.api_key.locked} invalid={invalid('model_endpoint.api_key')}>
          {(id) => (
            <div className="settings-key">
              <input
                id={id}
                type="password"
                autoComplete="new-password"
                value={form.apiKey}
                placeholder={endpoint.api_key.set ? 'Set (never shown); type to replace it' : 'Not set'}
                disabled={endpoint.api_key.locked || form.clearApiKey}
                onChange={(event) => update({ apiKey: event.target.value })}
              />
              {endpoint.api_key.set && endpoint.api_key.source.kind === 'app' && (
                <label className="settings-inline">
                  <input type="checkbox" checked={form.clearApiKey} onChange={(event) => update({ clearApiKey: event.target.checked, apiKey: '' })} /> Clear the
                  key
                </label>
              )}
            </div>
          )}
        </Field>
        <Field label="Model" source={view.model.source} locked={view.model.locked} invalid={invalid('model')}>
          {(id) => (
            <input
              id={id}
              value={view.model.locked ? view.model.value : form.model}
              placeholder={view.model.value}
              disabled={view.model.locked}
              onChange={(event) => update({ model: event.target.value })}
            />
          )}
        </Field>
        <JsonField section="models" view={view} form={form} update={update} invalid={invalid('models')} />
        <JsonField section="prices" view={view} form={form} update={update} invalid={invalid('prices')} />
      </fieldset>
      <fieldset>
        <legend>Tool approval</legend>
        <p className="muted">Rules by tool name or glob (files__*), the first match wins: auto runs it, ask waits for a person, deny never runs it.</p>
        <LockedEntries entries={view.approval} render={(value) => String(value)} />
        {rules.map((row, index) => (
          <div className="settings-rule" key={index}>
            <input
              aria-label={`Tool or glob of rule ${index + 1}`}
              value={row.pattern}
              aria-invalid={invalid(`approval.${row.pattern}`) || undefined}
              onChange={(event) => setRule(index, { ...row, pattern: event.target.value })}
            />
            <select
              aria-label={`Policy of rule ${index + 1}`}
              value={row.policy}
              onChange={(event) => setRule(index, { ...row, policy: event.target.value as RuleRow['policy'] })}
            >
              <option value="auto">auto</option>
              <option value="ask">ask</option>
              <option value="deny">deny</option>
            </select>
            <button type="button" className="ghost" onClick={() => setRule(index, undefined)}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" className="ghost" onClick={() => update({ rules: [...rules, { pattern: '', policy: 'ask' }] })}>
          Add a rule
        </button>
      </fieldset>
      <fieldset>
        <legend>MCP servers</legend>
        <LockedEntries entries={view.mcp_servers} render={(value) => JSON.stringify(value)} />
        <JsonField section="mcp_servers" view={view} form={form} update={update} invalid={invalid('mcp_servers')} />
        <ul className="settings-live">
          {view.mcp_servers.map((server) => (
            <li key={server.key}>
              <code>{server.key}</code>: {server.live ? `${server.live.status}, ${server.live.tools} tools` : 'not started'}
              {server.live?.error && <span className="settings-problem"> {server.live.error}</span>}
            </li>
          ))}
        </ul>
      </fieldset>
      <fieldset>
        <legend>Limits</legend>
        <div className="settings-limits">
          {view.limits.map((limit) => (
            <Field
              key={limit.name}
              label={limit.description}
              hint={limit.variable}
              source={limit.source}
              locked={limit.locked}
              invalid={invalid(`limits.${limit.name}`)}
            >
              {(id) => (
                <input
                  id={id}
                  type="number"
                  min={limit.min}
                  step={limit.decimal ? 'any' : 1}
                  value={limit.locked ? String(limit.value ?? '') : (form.limits[limit.name] ?? '')}
                  placeholder={limit.value === null ? 'none' : String(limit.value)}
                  disabled={limit.locked}
                  onChange={(event) => update({ limits: { ...form.limits, [limit.name]: event.target.value } })}
                />
              )}
            </Field>
          ))}
        </div>
      </fieldset>
      {issues.length > 0 && (
        <div className="settings-issues" role="alert">
          <p>Not saved; nothing changed:</p>
          <ul>
            {issues.map((issue) => (
              <li key={`${issue.path}:${issue.message}`}>
                <code>{issue.path}</code> {issue.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      <div className="settings-save">
        <button type="submit" className="primary" disabled={saving}>
          {saving ? 'Saving…' : 'Save changes'}
        </button>
        <span role="status">{saved}</span>
      </div>
      <h4 className="settings-history-title">Changes</h4>
      <SettingsHistory changes={view.changes} now={now} />
    </form>
  );
}

/** A labelled field with where its value comes from; locked ones say so. */
function Field({
  label,
  hint,
  source,
  locked,
  invalid,
  children,
}: {
  label: string;
  hint?: string;
  source: SettingSource;
  locked: boolean;
  invalid: boolean;
  children: (id: string) => ReactNode;
}) {
  const id = useId();
  return (
    <div className={`settings-field${invalid ? ' settings-field-invalid' : ''}`}>
      <label htmlFor={id}>
        {label} {hint && <code className="muted">{hint}</code>}
      </label>
      {children(id)}
      <span className={`setting-source${locked ? ' setting-locked' : ''}`} data-testid="setting-source">
        {locked ? `Locked (${sourceLabel(source)})` : sourceLabel(source)}
      </span>
    </div>
  );
}

/** The config file's entries of a keyed section: shown, not editable. */
function LockedEntries({ entries, render }: { entries: SettingsView['approval'] | SettingsView['mcp_servers']; render: (value: unknown) => string }) {
  const locked = entries.filter((entry) => entry.locked);
  if (locked.length === 0) return null;
  return (
    <ul className="settings-locked-entries">
      {locked.map((entry) => (
        <li key={entry.key}>
          <code>{entry.key}</code>: {render(entry.value)} <span className="setting-source setting-locked">Locked ({sourceLabel(entry.source)})</span>
        </li>
      ))}
    </ul>
  );
}

/** A keyed section the app sets, as a JSON object (its order is the order tried); the config file's entries above it, locked. */
function JsonField({
  section,
  view,
  form,
  update,
  invalid,
}: {
  section: JsonSection;
  view: SettingsView;
  form: SettingsForm;
  update: (change: Partial<SettingsForm>) => void;
  invalid: boolean;
}) {
  const id = useId();
  const { label, example } = JSON_LABELS[section];
  return (
    <div className={`settings-field${invalid ? ' settings-field-invalid' : ''}`}>
      <label htmlFor={id}>{label}</label>
      {section !== 'mcp_servers' && <LockedEntries entries={view[section] as SettingsView['approval']} render={(value) => JSON.stringify(value)} />}
      <textarea
        id={id}
        className="settings-json"
        rows={3}
        spellCheck={false}
        value={form.json[section]}
        placeholder={example}
        aria-invalid={invalid || undefined}
        onChange={(event) => update({ json: { ...form.json, [section]: event.target.value } })}
      />
    </div>
  );
}
