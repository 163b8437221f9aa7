import type { SettingInfo } from '@stepwise/shared-types';
import type { Config } from './config.ts';

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
const mebibytes = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;

/**
 * The settings a user may want to see and change, as the settings panel lists them: the variable,
 * its value now, what it does. Nothing secret (no key, no token, no database URL with a password).
 */
export function settingsInForce(config: Config): SettingInfo[] {
  const store = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `SQLite in ${config.dataDir}`;
  const rows: Array<[string, string, string]> = [
    ['LLM_PROVIDER', config.llm.provider, 'openai (any OpenAI-compatible endpoint) or demo (offline)'],
    ['LLM_MODEL', config.llm.model, 'The model name sent to the endpoint'],
    ['OPENAI_API_KEY', config.llm.apiKey ? 'set' : 'not set', 'The endpoint’s key (never shown)'],
    ['LLM_STREAMING', String(config.llm.streaming), 'Stream replies as they are written'],
    ['LLM_STRUCTURED_OUTPUT', String(config.llm.structuredOutput), 'Ask for data as structured output (false: in the prompt)'],
    ['AGENT_MAX_STEPS', String(config.agent.maxStepsDefault), 'Iterations a run may take by default'],
    ['AGENT_MAX_STEPS_LIMIT', String(config.agent.maxStepsLimit), 'The most iterations a run may ask for'],
    ['AGENT_INPUT_TIMEOUT_MS', seconds(config.agent.inputTimeoutMs), 'How long a question waits for an answer'],
    ['AGENT_RUN_TIMEOUT_MS', seconds(config.agent.runTimeoutMs), 'A run’s wall-clock budget'],
    ['AGENT_RUN_TOKEN_BUDGET', config.agent.runTokenBudget ? String(config.agent.runTokenBudget) : 'none', 'A run’s token budget'],
    ['CHAT_TIMEOUT_MS', seconds(config.limits.chatTimeoutMs), 'A plain answer’s wall-clock budget'],
    ['MAX_CONCURRENT_RUNS', String(config.limits.concurrentRuns), 'Runs the server does at once'],
    ['MAX_RUNS_PER_ADDRESS', String(config.limits.runsPerAddress), 'Runs one client may have at once'],
    ['MAX_MESSAGES_PER_SECOND', String(config.limits.messagesPerSecond), 'Messages one socket may send a second'],
    ['TOOL_TIMEOUT_MS', seconds(config.tools.timeoutMs), 'How long one tool call may take'],
    ['FILE_MAX_BYTES', mebibytes(config.files.maxBytes), 'The largest file a chat may hold'],
    ['SESSION_FILES_MAX', String(config.files.maxPerSession), 'Files one chat may hold'],
    ['STEPWISE_CONFIG', config.configFile, 'The config file (MCP servers)'],
    ['DATA_DIR', store, 'Where chats are kept'],
    ['AUTH_TOKEN', config.access.authToken ? 'set' : 'not set', 'A token every client must present'],
  ];
  return rows.map(([name, value, description]) => ({ name, value, description }));
}
