import 'reflect-metadata';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger as PinoLogger } from 'pino';
import type { DependencyContainer } from 'tsyringe';
import { type Config, exposureProblem, loadConfig } from './config/config.ts';
import { ConfigError } from './errors.ts';
import { loadConfigFile } from './config/config-file.ts';
import { SessionManager } from './chat/session-manager.ts';
import { ConnectionHandler } from './chat/connection-handler.ts';
import type { RunHost } from './hosting/run-host.ts';
import { Readiness } from './hosting/readiness.ts';
import { buildContainer } from './container.ts';
import { ModelHealthMonitor } from './llm/model-health.ts';
import { McpManager } from './mcp/mcp-manager.ts';
import { openStore } from './store/open-store.ts';
import { SettingsService } from './settings/settings-service.ts';
import type { Store } from './store/store.ts';
import { TOKENS } from './tokens.ts';
import { modelFor } from './llm/model-routes.ts';
import { startTracing } from './tracing/run-tracing.ts';
import { OTHER_TOOL, ToolRegistry } from './tools/tool-registry.ts';
import { buildServer } from './transport/server.ts';
import { Notifier } from './notify/notifier.ts';
import { version } from './version.ts';

/** Where the repository's own folders are, for defaults that work from a fresh checkout. */
export const REPOSITORY_PATHS = {
  prompts: fileURLToPath(new URL('../../prompts', import.meta.url)),
  webApp: fileURLToPath(new URL('../../frontend/dist', import.meta.url)),
};

/** Reads the settings from an environment, with the repository's defaults filled in. */
export function configFromEnv(env: Record<string, string | undefined>): Config {
  const config = loadConfig(env, { promptsDir: REPOSITORY_PATHS.prompts });
  const file = loadConfigFile(config.configFile, { required: config.configFileExplicit, env });
  return {
    ...config,
    mcp: { ...config.mcp, servers: file.mcpServers },
    llm: { ...config.llm, models: file.models, endpoints: file.endpoints, prices: file.prices },
    agent: { ...config.agent, approval: file.approval },
    transport: { ...config.transport, staticDir: config.transport.staticDir ?? REPOSITORY_PATHS.webApp },
  };
}

/** The model provider as the GenAI conventions name it (`gen_ai.provider.name`). */
function tracedProvider(config: Config): string {
  if (config.llm.provider === 'azure') return 'azure.ai.openai';
  return config.llm.provider === 'demo' ? 'stepwise.demo' : 'openai';
}

export interface RunningServer {
  app: FastifyInstance;
  container: DependencyContainer;
  /** The http URL the server listens on, e.g. http://127.0.0.1:8787. */
  url: string;
  /**
   * The first half of a shutdown: the readiness probe fails from now on, then (after `until`)
   * the runs are handed over or stopped, while the server still answers, the liveness probe too.
   */
  drain(until?: Promise<unknown>): Promise<void>;
  close(): Promise<void>;
}

/** Builds everything from the settings and starts listening. */
export async function startServer(options: {
  config: Config;
  logger?: PinoLogger;
  /** A store to use instead of opening the configured one; the caller closes it. */
  store?: Store;
  configure?: (container: DependencyContainer) => void;
}): Promise<RunningServer> {
  const { config } = options;
  const exposed = exposureProblem(config);
  if (exposed) throw new ConfigError(exposed);
  const logger = options.logger ?? pino({ level: config.logLevel });
  const store = options.store ?? (await openStore(config, logger));
  // Tracing loads its SDK only when it is on; its last spans are sent after everything else has closed.
  // A tool call's span is named after its tool only for a tool this server has (the registry exists once the container does).
  let tools: ToolRegistry | undefined;
  const tracing = config.tracing
    ? await startTracing(config.tracing, {
        provider: tracedProvider(config),
        logger,
        modelFor: (purpose) => modelFor(purpose, config.llm).model,
        toolLabel: (name) => tools?.label(name) ?? OTHER_TOOL,
        version: version(),
      })
    : undefined;
  // With tracing on, each log line of the app names its trace (and span).
  const container = buildContainer(config, tracing ? tracing.correlate(logger) : logger, store, options.configure, { tracing });
  tools = container.resolve(ToolRegistry);
  const app = await buildServer(container, logger);
  if (tracing) app.addHook('onClose', () => tracing.shutdown());
  // The store closes last, after every run has stopped and logged its end.
  if (!options.store) app.addHook('onClose', () => store.close());
  // MCP servers start in parallel (bounded wait); a server that fails keeps retrying in the background.
  const mcp = container.resolve(McpManager);
  app.addHook('onClose', () => mcp.close());
  // What admins set in the app holds from the start: its MCP servers start with the config file's.
  const settings = container.resolve(SettingsService);
  await settings.load();
  app.addHook('onClose', async () => settings.close());
  const notifier = container.resolve(Notifier);
  notifier.start();
  app.addHook('onClose', () => notifier.stop());
  await mcp.start();
  // Where sessions' runs live: one process, several instances (it joins them first), or Restate
  // workflows (this process serves them; Restate may call at once).
  const runHost = container.resolve<RunHost>(TOKENS.RunHost);
  await runHost.start();
  app.addHook('onClose', () => runHost.close());
  // With several instances, a change made on another takes effect here too; clients hear of each.
  const handler = container.resolve(ConnectionHandler);
  const stopAnnouncing = settings.onChange(() => handler.announceSettings());
  app.addHook('onClose', async () => stopAnnouncing());
  await settings.follow();
  const sessions = container.resolve(SessionManager);
  await sessions.recover();
  // The model's health goes live to every client; the first check runs alongside startup.
  const health = container.resolve(ModelHealthMonitor);
  const stopWatching = health.onChange((current) => sessions.broadcast({ type: 'model_health', health: current }));
  app.addHook('onClose', async () => stopWatching());
  void health.probe().catch((error: unknown) => logger.warn({ err: error }, 'model health check failed'));
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const readiness = container.resolve(Readiness);
  const drain = async (until?: Promise<unknown>) => {
    readiness.drain();
    await until;
    await sessions.stopAll('shutdown');
  };
  return { app, container, url: `http://${host}:${port}`, drain, close: () => app.close() };
}
