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
    ['LLM_PROVIDER', config.llm.provider, 'openai (any OpenAI-compatible endpoint), azure (Azure OpenAI) or demo (offline)'],
    ['LLM_MODEL', config.llm.model, 'The model name sent to the endpoint'],
    ...modelRoutes(config),
    ['LLM_PARAMS', Object.keys(config.llm.params).length ? JSON.stringify(config.llm.params) : 'none', 'Fields merged into every model request'],
    ...(config.llm.azure
      ? ([
          ['AZURE_OPENAI_API_KEY', config.llm.azure.apiKey ? 'set' : 'not set', 'The Azure resource’s key (never shown)'],
          ['OPENAI_API_VERSION', config.llm.azure.apiVersion, 'The Azure OpenAI API version'],
        ] as Array<[string, string, string]>)
      : ([['OPENAI_API_KEY', config.llm.apiKey ? 'set' : 'not set', 'The endpoint’s key (never shown)']] as Array<[string, string, string]>)),
    ['HTTPS_PROXY', config.llm.proxy.httpsProxy || config.llm.proxy.httpProxy ? 'set' : 'not set', 'A proxy for model requests (HTTP_PROXY, NO_PROXY too)'],
    ['LLM_STREAMING', String(config.llm.streaming), 'Stream replies as they are written'],
    ['LLM_STRUCTURED_OUTPUT', String(config.llm.structuredOutput), 'Ask for data as structured output (false: in the prompt)'],
    ['AGENT_MAX_STEPS', String(config.agent.maxStepsDefault), 'Iterations a run may take by default'],
    ['AGENT_MAX_STEPS_LIMIT', String(config.agent.maxStepsLimit), 'The most iterations a run may ask for'],
    ['AGENT_INPUT_TIMEOUT_MS', seconds(config.agent.inputTimeoutMs), 'How long a question waits for an answer'],
    ['INPUT_TIMEOUT_ACTION', config.agent.inputTimeoutAction, 'What a question nobody answered in time does (park: the run waits, holding nothing)'],
    ['APPROVAL_TIMEOUT_ACTION', config.agent.approvalTimeoutAction, 'What an approval nobody answered in time does'],
    ['STEER_QUEUE_MAX', String(config.agent.steerQueueMax), 'Messages that may wait for a running run in one chat'],
    ['STEER_MAX_CHARS', String(config.agent.steerMaxChars), 'Longest message sent to a running run (characters)'],
    ['AGENT_RUN_TIMEOUT_MS', seconds(config.agent.runTimeoutMs), 'A run’s wall-clock budget'],
    ['AGENT_RUN_TOKEN_BUDGET', config.agent.runTokenBudget ? String(config.agent.runTokenBudget) : 'none', 'A run’s token budget'],
    ['CHAT_TIMEOUT_MS', seconds(config.limits.chatTimeoutMs), 'A plain answer’s wall-clock budget'],
    ['MAX_CONCURRENT_RUNS', String(config.limits.concurrentRuns), 'Runs the server does at once'],
    ['MAX_RUNS_PER_ADDRESS', String(config.limits.runsPerAddress), 'Runs one client may have at once'],
    ['MAX_MESSAGES_PER_SECOND', String(config.limits.messagesPerSecond), 'Messages one socket may send a second'],
    ['MAX_SOCKETS_PER_ADDRESS', String(config.limits.socketsPerAddress), 'Sockets one client (user when signed in) may have open'],
    ['MAX_CONNECTIONS_PER_ADDRESS', String(config.limits.connectionsPerAddress), 'Connections one address may hold open (trusted proxies are not capped)'],
    ['REQUEST_TIMEOUT_MS', seconds(config.limits.requestTimeoutMs), 'How long a request, an upload included, may take to arrive'],
    ['MAX_UPLOADS_PER_CLIENT', String(config.limits.uploadsPerClient), 'Uploads one client may have going at once'],
    ['EVENTS_BYTES_PER_MINUTE', mebibytes(config.limits.eventsBytesPerMinute), 'Chat event logs one client may read a minute'],
    ['TOOL_TIMEOUT_MS', seconds(config.tools.timeoutMs), 'How long one tool call may take'],
    ['FILE_MAX_BYTES', mebibytes(config.files.maxBytes), 'The largest file a chat may hold'],
    ['SESSION_FILES_MAX', String(config.files.maxPerSession), 'Files one chat may hold'],
    ['PDF_MAX_PAGES', String(config.files.pdfMaxPages), 'Pages an attached PDF may have'],
    ['IMAGE_MAX_PER_MESSAGE', String(config.images.maxPerMessage), 'Images one message may send to a vision model'],
    ['IMAGE_MAX_SIDE', `${config.images.maxSide} px`, 'Longer image sides are scaled down before they are sent'],
    ['IMAGE_MAX_PIXELS', String(config.images.maxPixels), 'The largest image (width × height) a chat may hold'],
    ['STEPWISE_CONFIG', config.configFile, 'The config file (MCP servers)'],
    ['DATA_DIR', store, 'Where chats are kept'],
    ['AUTH_TOKEN', config.access.authToken ? 'set' : 'not set', 'A token every client must present'],
    ['AUTH_MODE', config.auth.mode, 'Who the users are: none (one local user), token, oidc (sign-in), header (an auth proxy)'],
    ['MAX_RUNS_PER_USER', config.quotas.runsPerUser === undefined ? 'none' : String(config.quotas.runsPerUser), 'Runs one user may have at once'],
    ['MAX_MESSAGES_PER_SECOND_PER_USER', String(config.quotas.messagesPerSecondPerUser), 'Messages one user may send a second, over all their sockets'],
    ['REST_MAX_REQUESTS_PER_MINUTE', String(config.quotas.restPerMinute), 'REST requests one user (or address) may make a minute'],
  ];
  return rows.map(([name, value, description]) => ({ name, value, description }));
}

/** Prefix of the rows that say which model serves which purposes (the Settings dialog lists them as such). */
export const MODEL_ROUTE_PREFIX = 'models.';

/** One row per route of the config file's "models", in the order they are tried. */
function modelRoutes(config: Config): Array<[string, string, string]> {
  const named = (target: { model: string; endpoint?: string }) => (target.endpoint ? `${target.endpoint}:${target.model}` : target.model);
  return config.llm.models.map((route) => [
    `${MODEL_ROUTE_PREFIX}${route.purpose}`,
    route.fallbacks?.length ? [route, ...route.fallbacks].map(named).join(', then ') : named(route),
    `The model for calls whose purpose matches ${route.purpose}${Object.keys(route.params).length ? `, with ${JSON.stringify(route.params)}` : ''}${route.fallbacks?.length ? '; when one fails (5xx, 429, a timeout, no connection) the next answers' : ''}`,
  ]);
}
