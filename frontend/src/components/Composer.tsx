import type { ToolInfo } from '@stepwise/shared-types';
import { type FormEvent, useEffect, useState } from 'react';

export interface ComposerProps {
  busy: boolean;
  stopping: boolean;
  connected: boolean;
  limits: { max_steps_default: number; max_steps_limit: number } | undefined;
  tools: ToolInfo[];
  onSend: (content: string, options: { agentMode: boolean; maxSteps: number; tools: string[] }) => boolean;
  onStop: () => void;
}

/** Clamps a typed value into the allowed range; what is sent is always valid. */
export function correctMaxSteps(value: string, fallback: number, limit: number): number {
  const number = Math.round(Number(value));
  if (!Number.isFinite(number) || value.trim() === '') return fallback;
  return Math.min(limit, Math.max(1, number));
}

/** The message box with the agent controls: Agent mode, Max iterations, tools, Send or Stop. */
export function Composer({ busy, stopping, connected, limits, tools, onSend, onStop }: ComposerProps) {
  const defaultSteps = limits?.max_steps_default ?? 10;
  const limit = limits?.max_steps_limit ?? 50;
  const [content, setContent] = useState('');
  const [agentMode, setAgentMode] = useState(true);
  const [maxSteps, setMaxSteps] = useState(String(defaultSteps));
  const [enabled, setEnabled] = useState<Set<string> | undefined>(undefined);

  // Until the user picks, the run gets every built-in tool; defaults follow the server's limits.
  useEffect(() => setMaxSteps(String(defaultSteps)), [defaultSteps]);
  const enabledTools = enabled ?? new Set(tools.filter((tool) => tool.source === 'builtin').map((tool) => tool.name));

  const correct = () => {
    const corrected = correctMaxSteps(maxSteps, defaultSteps, limit);
    setMaxSteps(String(corrected));
    return corrected;
  };

  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    const text = content.trim();
    if (!text || busy) return;
    const sent = onSend(text, { agentMode, maxSteps: correct(), tools: tools.map((tool) => tool.name).filter((name) => enabledTools.has(name)) });
    if (sent) setContent('');
  };

  const toggleTool = (name: string) => {
    const next = new Set(enabledTools);
    if (next.has(name)) next.delete(name);
    else next.add(name);
    setEnabled(next);
  };

  return (
    <form className="composer" onSubmit={submit}>
      <div className="agent-controls">
        <label className="switch">
          <input type="checkbox" role="switch" checked={agentMode} onChange={(event) => setAgentMode(event.target.checked)} aria-label="Agent mode" />
          <span className="switch-track" aria-hidden="true" />
          <span>Agent mode</span>
        </label>
        <label className="max-steps">
          <span>Max iterations</span>
          <input
            type="number"
            inputMode="numeric"
            min={1}
            max={limit}
            step={1}
            value={maxSteps}
            disabled={!agentMode}
            aria-label="Max iterations"
            onChange={(event) => setMaxSteps(event.target.value)}
            onBlur={correct}
          />
        </label>
        {agentMode && tools.length > 0 && (
          <fieldset className="tool-picker">
            <legend>Tools</legend>
            {tools.map((tool) => (
              <label key={tool.name} title={tool.description}>
                <input type="checkbox" checked={enabledTools.has(tool.name)} onChange={() => toggleTool(tool.name)} />
                <span>{tool.name}</span>
              </label>
            ))}
          </fieldset>
        )}
      </div>
      <div className="composer-row">
        <textarea
          aria-label="Message"
          placeholder={agentMode ? 'Ask the agent… (Enter sends, Shift+Enter breaks the line)' : 'Message… (Enter sends)'}
          value={content}
          rows={2}
          onChange={(event) => setContent(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
              event.preventDefault();
              submit();
            }
          }}
        />
        {busy ? (
          <button type="button" className="danger" onClick={onStop} disabled={stopping} aria-label="Stop">
            {stopping ? 'Stopping…' : 'Stop'}
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!connected || !content.trim()}>
            Send
          </button>
        )}
      </div>
    </form>
  );
}
