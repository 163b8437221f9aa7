import { Notifier } from '../notify/notifier.ts';
import { registerPushRoutes } from './push-routes.ts';
import type { RunHost } from '../hosting/run-host.ts';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyHelmet from '@fastify/helmet';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifyStatic from '@fastify/static';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import type { DependencyContainer } from 'tsyringe';
import { ConnectionHandler } from '../chat/connection-handler.ts';
import { HistoryService } from '../chat/history-service.ts';
import { SessionManager } from '../chat/session-manager.ts';
import type { Config } from '../config/config.ts';
import type { Store } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { SessionFiles } from '../files/session-files.ts';
import { McpManager } from '../mcp/mcp-manager.ts';
import { Metrics } from '../metrics/metrics.ts';
import { z } from 'zod';
import { checkAccess, chooseSubprotocol, METRICS_ROUTE, PUBLIC_ROUTE, type RouteAccess } from './access.ts';
import { registerAuthRoutes } from './auth-routes.ts';
import { registerHealthRoutes } from './health-routes.ts';
import { SECURITY_HEADERS, webAppFiles } from './http-policy.ts';
import { Readiness } from '../hosting/readiness.ts';
import type { Logger } from '../logger.ts';
import { registerAgUiRoutes } from './ag-ui/route.ts';
import { registerMcpRoutes } from './mcp/mcp-route.ts';
import { registerA2aRoutes } from './a2a/a2a-route.ts';
import { RunKernel } from '../agent/kernel/run-kernel.ts';
import { version } from '../version.ts';
import type { CallerTraces } from '../tracing/run-tracing.ts';
import { errorResponses, mediaResponse, registerOpenApi } from './openapi.ts';
import { clientOf, ConnectionsPerAddress, InProgressPerClient, refusedConnection, SocketsPerClient } from './connection-limits.ts';
import { TrustedProxies } from '../auth/identify.ts';
import { EVENT_PAGES_IN_FLIGHT, registerRestRoutes } from './rest-routes.ts';
import { WorkBudgets } from '../limits/work-budgets.ts';
import { registerWebSocketRoute } from './websocket-route.ts';
import { registerSharingRoutes } from './sharing-routes.ts';
import { answerPageStatus, registerQuestionRoutes } from './question-routes.ts';
import { registerSettingsRoutes } from './settings-routes.ts';
import { SettingsService } from '../settings/settings-service.ts';

const PLACEHOLDER_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Stepwise</title></head>
<body><h1>Stepwise</h1><p>The server is running. The web app has not been built yet: run <code>npx -y pnpm@10 build</code>.</p>
<p>Clients connect to <code>/ws</code>.</p></body></html>`;

/** Builds the Fastify app: external plugins, then app services, then routes. */
export async function buildServer(container: DependencyContainer, logger: PinoLogger): Promise<FastifyInstance> {
  const config = container.resolve<Config>(TOKENS.Config);
  const handler = container.resolve(ConnectionHandler);
  const sessions = container.resolve(SessionManager);

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: true,
    // Behind trusted proxies a client's address (request.ip, whose share of the limits it takes
    // before sign-in) is the one they forward, never the proxy's own.
    trustProxy: config.limits.trustedProxies.length > 0 ? config.limits.trustedProxies : false,
    // A request's headers and body must all arrive within REQUEST_TIMEOUT_MS (a slow upload is cut
    // with 408), checked often enough that the bound holds to about a quarter of it. An upgraded
    // socket is no request any more: it is not cut.
    requestTimeout: config.limits.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, config.limits.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(5_000, Math.max(50, Math.ceil(config.limits.requestTimeoutMs / 4))),
    },
  });
  const proxies = new TrustedProxies(config.limits.trustedProxies);
  new ConnectionsPerAddress(config.limits.connectionsPerAddress, (address) => proxies.trusts(address)).watch(app.server);
  // Every answered request is timed by its route's pattern (bounded), whatever refused or served it.
  const metrics = container.resolve(Metrics);
  app.addHook('onResponse', async (request, reply) => {
    metrics.observeHttp(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
  });
  // A request on a connection refused with 429 is dropped before any hook or route acts on it.
  app.addHook('onRequest', async (request, reply) => {
    // Its 429 is written and its end sent; the socket goes when the client closes it (or after a second).
    if (refusedConnection(request.raw.socket)) reply.hijack();
  });

  await app.register(fastifyWebsocket, {
    options: { maxPayload: config.transport.maxFrameBytes, handleProtocols: chooseSubprotocol },
    // Stop runs first, so their clients still hear agent_stopped before the sockets close.
    preClose: async function closeSockets(this: FastifyInstance) {
      await sessions.stopAll('shutdown');
      for (const client of this.websocketServer.clients) client.close(1001, 'Server shutting down');
      await new Promise<void>((resolve) => this.websocketServer.close(() => resolve()));
    },
  });
  // A CSP, no framing, no referrer and the other security headers, on every response.
  await app.register(fastifyHelmet, SECURITY_HEADERS);
  // The sign-in cookie is read (and its signature checked with SESSION_SECRET) before the access check.
  await app.register(fastifyCookie, config.auth.mode === 'oidc' ? { secret: config.auth.sessionSecret } : {});
  app.decorateRequest('user', undefined);
  // Every REST call and upgrade passes the access check before any route runs. It comes after the
  // WebSocket plugin's own onRequest hook, which must mark upgrades so that refused ones are closed.
  // It says who the request comes from (request.user).
  const store = container.resolve<Store>(TOKENS.Store);
  app.addHook(
    'onRequest',
    checkAccess(config, (id) => store.isSignInRevoked(id)),
  );
  // Whose share of the limits a request takes: its user's when users sign in (they may all come
  // through one proxy), its address's otherwise.
  app.decorateRequest('client', '');
  app.addHook('onRequest', async (request) => {
    request.client = clientOf(request, config);
  });
  // REST calls per client (see above), after the check has named the user; the web app's files
  // and the health check are not counted.
  await app.register(fastifyRateLimit, {
    hook: 'preHandler',
    max: config.quotas.restPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.client,
    allowList: (request) =>
      ((request.routeOptions.config as { access?: RouteAccess } | undefined)?.access ?? 'api') === 'public' && !request.url.startsWith('/auth/'),
    errorResponseBuilder: (_request, context) =>
      Object.assign(new Error(`Too many requests: at most ${context.max} a minute; try again in ${context.after}`), { statusCode: 429 }),
  });
  const questions = { history: container.resolve(HistoryService), sessions, store };
  // Routes declared from here on are validated against their zod schemas and described at /api/openapi.json.
  await registerOpenApi(app);
  // The web app's files are the only routes open to anyone (besides the health check); every
  // other route, including any added later, needs the token when one is set.
  await app.register(async (webApp) => {
    webApp.addHook('onRoute', (route) => {
      route.config = { ...(route.config as object), ...PUBLIC_ROUTE.config };
    });
    const staticDir = config.transport.staticDir;
    if (staticDir && existsSync(staticDir)) {
      await webApp.register(fastifyStatic, webAppFiles(staticDir));
      // A notification's link to one question: the web app answers it (and checks access over the socket).
      // 404 for a signed-in person whose question is not open (the page says so too).
      webApp.get<{ Params: { question_id: string }; Querystring: { session?: string } }>(
        '/answer/:question_id',
        { schema: { hide: true } },
        async (request, reply) =>
          (await answerPageStatus(questions, request)) === 404
            ? // The page itself, not a file response a browser could revalidate into a 304.
              reply
                .code(404)
                .header('cache-control', 'no-store')
                .type('text/html')
                .send(await readFile(join(staticDir, 'index.html')))
            : reply.header('cache-control', 'no-cache').sendFile('index.html'),
      );
    } else {
      webApp.get('/', (_request, reply) => reply.type('text/html').send(PLACEHOLDER_PAGE));
    }
  });

  registerHealthRoutes(app, container.resolve<RunHost>(TOKENS.RunHost), container.resolve(Readiness));
  await registerAuthRoutes(app, config, container.resolve<Logger>(TOKENS.Logger), store);
  const eventPages = new WorkBudgets(config.limits.eventsBytesPerMinute, EVENT_PAGES_IN_FLIGHT);
  const uploads = new InProgressPerClient(config.limits.uploadsPerClient);
  registerRestRoutes(app, container.resolve(HistoryService), container.resolve(SessionFiles), { eventPages, uploads });
  registerSharingRoutes(app, container);
  registerQuestionRoutes(app, questions);
  registerPushRoutes(app, container.resolve(Notifier), container.resolve<Store>(TOKENS.Store).push, config.notify.pushServiceHosts);
  await registerSettingsRoutes(app, container.resolve(SettingsService), config);
  const callers = container.resolve<CallerTraces>(TOKENS.CallerTraces);
  registerAgUiRoutes(app, { handler, sessions, store, limits: config.limits, callers });
  const kernel = container.resolve(RunKernel);
  registerMcpRoutes(app, {
    handler,
    history: container.resolve(HistoryService),
    catalog: () => kernel.catalog(),
    logger: container.resolve<Logger>(TOKENS.Logger),
    version: version(),
    callers,
  });
  registerA2aRoutes(app, {
    handler,
    catalog: () => kernel.catalog(),
    logger: container.resolve<Logger>(TOKENS.Logger),
    version: version(),
    bearer: config.auth.mode !== 'none',
    callers,
    tasks: store.agentTasks,
  });
  const sockets = new SocketsPerClient(config.limits.socketsPerAddress);
  registerWebSocketRoute(app, handler, sockets, config.limits);
  const mcp = container.resolve(McpManager);
  metrics.readLiveCounts({
    runsActive: () => sessions.runsActive,
    questionsWaiting: () => sessions.questionsWaiting,
    connections: () => sockets.total,
    mcpServers: () => mcp.status().map((server) => ({ name: server.name, up: server.status === 'connected' })),
  });
  // Prometheus scrapes with the access token, or METRICS_TOKEN, which opens this route alone.
  const metricsSchema = {
    tags: ['meta'],
    summary: 'Prometheus metrics (text format); AUTH_TOKEN or METRICS_TOKEN',
    response: { 200: mediaResponse('Prometheus text format 0.0.4', { 'text/plain': z.string() }), ...errorResponses(401) },
  };
  app.get('/metrics', { ...METRICS_ROUTE, schema: metricsSchema }, async (_request, reply) => {
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
  return app;
}
