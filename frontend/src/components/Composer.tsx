import type { McpServerStatus, ToolInfo } from '@stepwise/shared-types';
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { PaperclipIcon } from './Icons.tsx';

export interface ComposerProps {
  busy: boolean;
  stopping: boolean;
  connected: boolean;
  limits: { max_steps_default: number; max_steps_limit: number } | undefined;
  tools: ToolInfo[];
  mcpServers: McpServerStatus[];
  onAttach: (files: File[]) => void;
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
export function Composer({ busy, stopping, connected, limits, tools, mcpServers, onAttach, onSend, onStop }: ComposerProps) {
  const fileInput = useRef<HTMLInputElement>(null);
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
        {agentMode && (tools.length > 0 || mcpServers.length > 0) && (
          <div className="tool-picker">
            {groupBySource(tools, mcpServers).map((group) => (
              <fieldset key={group.source} className="tool-group">
                <legend>
                  {group.source === 'builtin' ? 'Tools' : group.source}
                  {group.server && group.server.status !== 'connected' && (
                    <span className={`server-status server-${group.server.status}`} title={group.server.error}>
                      {group.server.status === 'connecting' ? ' connecting…' : ' unavailable, retrying'}
                    </span>
                  )}
                </legend>
                {group.tools.map((tool) => (
                  <label key={tool.name} title={tool.description} className={tool.available === false ? 'tool-unavailable' : undefined}>
                    <input type="checkbox" checked={enabledTools.has(tool.name)} onChange={() => toggleTool(tool.name)} />
                    <span>{group.source === 'builtin' ? tool.name : tool.name.slice(group.source.length + 2)}</span>
                  </label>
                ))}
              </fieldset>
            ))}
          </div>
        )}
      </div>
      <div className="composer-row">
        <input
          ref={fileInput}
          type="file"
          multiple
          hidden
          aria-label="Attach files"
          onChange={(event) => {
            const files = [...(event.target.files ?? [])];
            event.target.value = '';
            if (files.length) onAttach(files);
          }}
        />
        <button type="button" className="attach" onClick={() => fileInput.current?.click()} disabled={!connected} title="Attach files (or drop them anywhere)">
          <PaperclipIcon />
          <span className="visually-hidden">Attach</span>
        </button>
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

interface ToolGroup {
  source: string;
  server: McpServerStatus | undefined;
  tools: ToolInfo[];
}

/** Built-in tools first, then each MCP server's tools under its name (servers without tools too, with their state). */
function groupBySource(tools: ToolInfo[], servers: McpServerStatus[]): ToolGroup[] {
  const groups = new Map<string, ToolGroup>([['builtin', { source: 'builtin', server: undefined, tools: [] }]]);
  for (const server of servers) groups.set(server.name, { source: server.name, server, tools: [] });
  for (const tool of tools) {
    const group = groups.get(tool.source) ?? { source: tool.source, server: undefined, tools: [] };
    group.tools.push(tool);
    groups.set(tool.source, group);
  }
  return [...groups.values()].filter((group) => group.tools.length > 0 || group.server);
}
