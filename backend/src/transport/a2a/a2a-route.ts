import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { StrategyInfo } from '@stepwise/shared-types';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ConnectionHandler } from '../../chat/connection-handler.ts';
import type { Logger } from '../../logger.ts';
import type { AgentTaskStore } from '../../store/agent-task-store.ts';
import { errorResponses, mediaResponse } from '../openapi.ts';
import type { CallerTraces } from '../../tracing/run-tracing.ts';
import { A2aCaller, agentCard, StepwiseA2aExecutor } from './a2a-executor.ts';
import { StoredA2aTasks } from './a2a-task-store.ts';

/** What the A2A server needs of the app. */
export interface A2aDependencies {
  /** Opens the chats tasks run in. */
  handler: ConnectionHandler;
  catalog: () => StrategyInfo[];
  logger: Logger;
  version: string;
  /** Whether callers present a bearer token (AUTH_TOKEN or OIDC), as the card declares. */
  bearer: boolean;
  /** Where a caller's traceparent goes: the run its message starts links to it. */
  callers: CallerTraces;
  /** Where tasks are kept (the store: they outlive a restart, and every instance reads them). */
  tasks: AgentTaskStore;
}

/** Where A2A's JSON-RPC is served. */
const A2A_PATH = '/a2a';
const VERSION_HEADER = 'a2a-version';
const LEGACY_VERSION = '0.3';

/** The A2A SDK's server side, loaded at the first A2A request (never at start). */
async function loadSdk() {
  const [types, errors, server, legacy] = await Promise.all([
    import('@a2a-js/sdk'),
    import('@a2a-js/sdk/errors'),
    import('@a2a-js/sdk/server'),
    import('@a2a-js/sdk/compat/v0_3/server'),
  ]);
  return { types, errors, server, legacy };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

/**
 * A2A: the agent card at `/.well-known/agent-card.json` (a skill per strategy) and JSON-RPC at
 * `/a2a`, A2A 1.0 (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, …) when the
 * request says `A2A-Version: 1.0`, and A2A 0.3 (`message/send`, `message/stream`, `tasks/get`,
 * `tasks/cancel`, …) otherwise, both through the A2A SDK's request handler with Stepwise runs as
 * its tasks. Behind the same access check as every route. docs/PROTOCOL.md, "A2A".
 */
export function registerA2aRoutes(app: FastifyInstance, deps: A2aDependencies): void {
  const executor = new StepwiseA2aExecutor(deps.handler, deps.logger, deps.callers);
  const cardOf = (request: FastifyRequest) => agentCard(`${request.protocol}://${request.host}${A2A_PATH}`, deps.catalog(), deps.version, deps.bearer);
  let loading: Promise<{ sdk: Sdk; handler: A2ARequestHandler }> | undefined;
  const load = (request: FastifyRequest) =>
    (loading ??= loadSdk().then(
      (sdk) => ({ sdk, handler: requestHandler(sdk, cardOf(request), executor, deps.tasks) }),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));

  app.get(
    '/.well-known/agent-card.json',
    {
      schema: {
        tags: ['a2a'],
        summary: 'The A2A agent card: Stepwise, a skill per strategy, JSON-RPC at /a2a',
        response: { 200: z.record(z.string(), z.unknown()), ...errorResponses(401) },
      },
    },
    async (request) => cardOf(request),
  );

  app.post(
    A2A_PATH,
    {
      schema: {
        tags: ['a2a'],
        summary: 'A2A JSON-RPC (1.0 with A2A-Version: 1.0, else 0.3): send or stream a message, get or cancel a task',
        body: z.record(z.string(), z.unknown()).describe('A JSON-RPC 2.0 request'),
        response: {
          200: mediaResponse('A JSON-RPC response, or its stream (one response per data: line)', {
            'application/json': z.record(z.string(), z.unknown()),
            'text/event-stream': z.string(),
          }),
          ...errorResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      const { sdk, handler } = await load(request);
      const header = request.headers[VERSION_HEADER];
      const requestedVersion = typeof header === 'string' && header ? header : LEGACY_VERSION;
      const legacy = requestedVersion === LEGACY_VERSION;
      const context = sdk.server.defaultServerCallContextBuilder({
        extensions: undefined,
        user: new A2aCaller({ client: request.client, user: request.user }, request.headers),
        headers: request.headers,
        requestedVersion,
      });
      const body = request.body as Record<string, unknown>;
      let response: Awaited<ReturnType<InstanceType<Sdk['server']['JsonRpcTransportHandler']>['handle']>>;
      try {
        sdk.server.validateVersion(requestedVersion, await handler.getAgentCard(), 'JSONRPC');
        response = legacy
          ? ((await new sdk.legacy.LegacyJsonRpcTransportHandler(handler).handle(body, context)) as typeof response)
          : await new sdk.server.JsonRpcTransportHandler(handler).handle(body, context);
      } catch (error) {
        const mapped = legacy
          ? sdk.legacy.LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
          : sdk.server.JsonRpcTransportHandler.mapToJSONRPCError(error);
        return reply.send({ jsonrpc: '2.0', id: (body.id as string | number | undefined) ?? null, error: mapped });
      }
      if (!(Symbol.asyncIterator in Object(response))) return reply.type('application/json').send(response);
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
      try {
        for await (const event of response as AsyncGenerator<unknown>) reply.raw.write(`data: ${JSON.stringify(event)}\n\n`);
      } catch (error) {
        const mapped = legacy
          ? sdk.legacy.LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
          : sdk.server.JsonRpcTransportHandler.mapToJSONRPCError(error);
        reply.raw.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id ?? null, error: mapped })}\n\n`);
      } finally {
        reply.raw.end();
      }
    },
  );
}

/**
 * The SDK's request handler over the store's tasks, scoped by caller, with one change: a task's
 * cancellation first stops its run, wherever it runs (the SDK asks the executor only while a
 * request of the task is in progress here, not while it waits for input, nor after a restart).
 */
function requestHandler(sdk: Sdk, card: ReturnType<typeof agentCard>, executor: StepwiseA2aExecutor, tasks: AgentTaskStore): A2ARequestHandler {
  const store = new StoredA2aTasks(tasks, {
    Task: sdk.types.Task,
    taskStateToJSON: sdk.types.taskStateToJSON,
    ownerOf: sdk.server.resolveUserScope,
    malformed: (message) => new sdk.errors.RequestMalformedError(message),
  });
  const handler = new sdk.server.DefaultRequestHandler(card, store, executor);
  const cancel = handler.cancelTask.bind(handler);
  handler.cancelTask = async (params, context) => {
    const task = await handler.getTask({ id: params.id, tenant: params.tenant, historyLength: 0 }, context);
    await executor.stop(task, context.user as A2aCaller | undefined);
    try {
      return await cancel(params, context);
    } finally {
      executor.canceled(task.id);
    }
  };
  return handler;
}
