import type { McpServerStatus, ToolInfo } from '@stepwise/shared-types';

/** What a tool's approval policy means, in words. */
export const POLICY_WORDS: Record<NonNullable<ToolInfo['approval']>, string> = {
  auto: 'Runs without asking',
  ask: 'Asks you to approve each call',
  deny: 'Never runs (the server’s policy denies it)',
};

/** The tools a run may use, built-in ones first, then each MCP server's under its name and state. */
export function ToolPicker({
  tools,
  mcpServers,
  enabled,
  onToggle,
}: {
  tools: ToolInfo[];
  mcpServers: McpServerStatus[];
  enabled: Set<string>;
  onToggle: (name: string) => void;
}) {
  return (
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
              <input type="checkbox" checked={enabled.has(tool.name)} onChange={() => onToggle(tool.name)} />
              <span>{group.source === 'builtin' ? tool.name : tool.name.slice(group.source.length + 2)}</span>
              {tool.approval && tool.approval !== 'auto' && (
                <span className={`badge approval-policy approval-${tool.approval}`} aria-hidden="true" title={POLICY_WORDS[tool.approval]}>
                  {tool.approval === 'ask' ? 'asks' : 'never'}
                </span>
              )}
            </label>
          ))}
        </fieldset>
      ))}
    </div>
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
