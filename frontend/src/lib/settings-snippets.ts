import type { SessionEvent, SettingInfo } from '@stepwise/shared-types';

/** How Stepwise is started from its folder; every snippet ends with it. */
export const START_COMMAND = 'npx -y pnpm@10 start';

/** Where the config file is when the server does not say (PROTOCOL.md's default). */
export const DEFAULT_CONFIG_FILE = './stepwise.config.json';

/** A config file entry that adds an MCP server, in the `mcpServers` shape other MCP clients use (the server's entry on one line). */
export const MCP_CONFIG_SNIPPET = `{
  "mcpServers": {
    "NAME": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] }
  }
}`;

/** A command line that changes some settings, with what it is for. */
export interface ChangeSnippet {
  title: string;
  command: string;
}

/** The config file's path: as the session says, else as the settings list says, else the default. */
export function configFilePath(session: SessionEvent | undefined): string {
  return session?.config_file ?? session?.settings?.find((setting) => setting.name === 'STEPWISE_CONFIG')?.value ?? DEFAULT_CONFIG_FILE;
}

/**
 * Command lines that start Stepwise with other settings: a local model, a hosted one, other limits.
 * Variable names come from the server's settings list where it has them (the model's may be
 * LLM_MODEL or OPENAI_MODEL), else from PROTOCOL.md.
 */
export function changeSnippets(settings: SettingInfo[] | undefined): ChangeSnippet[] {
  const names = new Set((settings ?? []).map((setting) => setting.name));
  const model = ['LLM_MODEL', 'OPENAI_MODEL'].find((name) => names.has(name)) ?? 'LLM_MODEL';
  const limits = ['AGENT_MAX_STEPS', 'AGENT_MAX_STEPS_LIMIT'].filter((name) => names.size === 0 || names.has(name));
  const example: Record<string, string> = { AGENT_MAX_STEPS: '20', AGENT_MAX_STEPS_LIMIT: '50' };
  return [
    { title: 'A local model (Ollama, llama.cpp, vLLM…)', command: `OPENAI_BASE_URL=http://localhost:11434/v1 ${model}=llama3.1 ${START_COMMAND}` },
    {
      title: 'A hosted OpenAI-compatible endpoint',
      command: `OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… ${model}=gpt-4o-mini ${START_COMMAND}`,
    },
    ...(limits.length ? [{ title: 'Other limits', command: `${limits.map((name) => `${name}=${example[name]}`).join(' ')} ${START_COMMAND}` }] : []),
  ];
}

/** The limits to list when the server sends no settings: the two every session carries. */
export function settingsOrLimits(session: SessionEvent | undefined): SettingInfo[] {
  if (session?.settings?.length) return session.settings;
  if (!session) return [];
  return [
    { name: 'AGENT_MAX_STEPS', value: String(session.limits.max_steps_default), description: 'Iterations a run may take by default' },
    { name: 'AGENT_MAX_STEPS_LIMIT', value: String(session.limits.max_steps_limit), description: 'The most iterations a run may ask for' },
  ];
}
