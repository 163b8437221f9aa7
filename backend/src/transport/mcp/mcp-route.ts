import { randomUUID } from 'node:crypto';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { LOCAL_USER } from '../../auth/user.ts';
import { errorResponses, mediaResponse } from '../openapi.ts';
import { sendError } from '../rest-routes.ts';
import { type AgentMcpDependencies, agentMcpServer } from './agent-mcp-server.ts';

/** MCP sessions kept at once; past this the one used longest ago is closed. */
const MAX_SESSIONS = 256;

/** The MCP SDK's server side and Stepwise's MCP server, loaded at the first /mcp request (never at start). */
async function loadMcpServer() {
  const [transport, server] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/server/mcp.js'),
  ]);
  return { StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport, server };
}
let loading: ReturnType<typeof loadMcpServer> | undefined;
const mcpPackages = () =>
  (loading ??= loadMcpServer().catch((error: unknown) => {
    loading = undefined;
    throw error;
  }));

interface McpSession {
  transport: StreamableHTTPServerTransport;
  /** The user who began it: only they may use it. */
  owner: string;
}

/**
 * `/mcp`: Stepwise as an MCP server over Streamable HTTP (POST for messages, GET for the server's
 * own stream, DELETE to end a session), behind the same access check as every route. Each MCP
 * session belongs to the user who initialized it; its id (`Mcp-Session-Id`) in another user's
 * request is not found. docs/PROTOCOL.md, "MCP".
 */
export function registerMcpRoutes(app: FastifyInstance, deps: AgentMcpDependencies): void {
  const sessions = new Map<string, McpSession>();
  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const owner = (request.user ?? LOCAL_USER).id;
    const header = request.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' ? header : undefined;
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (sessionId && session?.owner !== owner) return sendError(reply, 404, 'not_found', 'No such MCP session (it ended, or was never begun)');
    if (session && sessionId) {
      // Most recently used last, so the oldest is the first to go.
      sessions.delete(sessionId);
      sessions.set(sessionId, session);
    }
    if (!session) {
      if (request.method !== 'POST') return sendError(reply, 400, 'bad_request', 'Begin an MCP session with an initialize request (POST)');
      const { StreamableHTTPServerTransport, server } = await mcpPackages();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, owner });
          if (sessions.size > MAX_SESSIONS) {
            const [oldest, entry] = sessions.entries().next().value!;
            sessions.delete(oldest);
            void entry.transport.close();
          }
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await agentMcpServer(server, deps, { client: request.client, user: request.user }).connect(transport);
      session = { transport, owner };
    }
    reply.hijack();
    await session.transport.handleRequest(request.raw, reply.raw, request.body);
  };
  const schema = (summary: string) => ({
    schema: {
      tags: ['mcp'],
      summary,
      response: {
        200: mediaResponse('JSON-RPC over Streamable HTTP', { 'application/json': z.record(z.string(), z.unknown()), 'text/event-stream': z.string() }),
        ...errorResponses(400, 401, 404),
      },
    },
  });
  app.post('/mcp', schema('MCP (Streamable HTTP): a JSON-RPC message from the client; the first is initialize'), handle);
  app.get('/mcp', schema('MCP (Streamable HTTP): the server’s own event stream for a session'), handle);
  app.delete('/mcp', schema('MCP (Streamable HTTP): ends a session'), handle);
  app.addHook('onClose', async () => {
    for (const session of sessions.values()) await session.transport.close();
    sessions.clear();
  });
}
