import { ChatCopy, ChatExport, CreateShare, SearchResults, SharedChat, ShareInfo, ShareList } from '@stepwise/shared-types';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { DependencyContainer } from 'tsyringe';
import { ChatExporter } from '../chat/chat-export.ts';
import { ChatSearch } from '../chat/chat-search.ts';
import { ChatShares } from '../chat/chat-shares.ts';
import { SessionFiles } from '../files/session-files.ts';
import type { RouteAccess } from './access.ts';
import { Binary, errorResponses, mediaResponse, SessionParams } from './openapi.ts';
import { contentDisposition, sendDownload, viewer } from './rest-routes.ts';

/**
 * The routes of a shared link: open to anyone who has it (no sign-in), yet counted against each
 * client's REST_MAX_REQUESTS_PER_MINUTE like the API (public routes are otherwise not counted),
 * since each one reads a chat from the store.
 */
const OPEN_TO_THE_LINK = { config: { access: 'public' as RouteAccess, rateLimit: { allowList: () => false } } };

/** A shared link's token in a path. */
const TokenParams = z.object({ token: z.string().describe('The link’s token') });

/**
 * What people bring and take away: search across chats, a chat exported, a chat shared by a
 * read-only link. Glue from HTTP to the services; errors as the history API's.
 */
export function registerSharingRoutes(server: FastifyInstance, container: DependencyContainer): void {
  const services = {
    search: container.resolve(ChatSearch),
    exporter: container.resolve(ChatExporter),
    shares: container.resolve(ChatShares),
    files: container.resolve(SessionFiles),
  };
  const app = server.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/api/search',
    {
      schema: {
        tags: ['history'],
        summary: 'Searches the titles, user messages and answers of the person’s chats; best match first, the matched words marked',
        querystring: z.object({
          q: z
            .string({ error: 'q is required' })
            .max(500, 'q must be at most 500 characters')
            .describe('The words to look for; each must match (a word or its start)'),
          limit: z.coerce
            .number({ error: 'limit must be an integer from 1 to 100' })
            .int('limit must be an integer from 1 to 100')
            .min(1, 'limit must be an integer from 1 to 100')
            .max(100, 'limit must be an integer from 1 to 100')
            .default(30),
          scope: z
            .enum(['own', 'all'], { error: 'scope must be own or all' })
            .default('own')
            .describe('all: everyone’s chats, each hit naming its owner (admins only)'),
        }),
        response: { 200: SearchResults, ...errorResponses(400, 401, 429) },
      },
    },
    (request) => services.search.search(viewer(request), request.query.q, { limit: request.query.limit, everyone: request.query.scope === 'all' }),
  );
  app.get(
    '/api/sessions/:id/export',
    {
      schema: {
        tags: ['history'],
        summary: 'Downloads a chat: as Markdown (every question, step, tool call and answer) or as JSON (its messages, runs and every event)',
        params: SessionParams,
        querystring: z.object({
          format: z.enum(['markdown', 'json'], { error: 'format must be markdown or json' }).default('markdown'),
        }),
        response: {
          200: mediaResponse('format=json: a ChatExport; format=markdown: the chat as Markdown. Sent as an attachment.', {
            'application/json': ChatExport,
            'text/markdown': z.string(),
          }),
          ...errorResponses(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const chat = await services.exporter.export(request.params.id, viewer(request));
      const name = fileName(chat.session.title);
      if (request.query.format === 'json') {
        return (reply as FastifyReply)
          .type('application/json; charset=utf-8')
          .header('content-disposition', contentDisposition(`${name}.json`))
          .send(JSON.stringify(chat, null, 2));
      }
      return (reply as FastifyReply)
        .type('text/markdown; charset=utf-8')
        .header('content-disposition', contentDisposition(`${name}.md`))
        .send(services.exporter.markdown(chat));
    },
  );
  registerShareRoutes(app, services.shares, services.files);
}

/**
 * Read-only links: the owner makes, lists and revokes them; `/api/shared/:token` is open to anyone
 * with the link (no sign-in), and shows that chat as it stood and nothing else.
 */
function registerShareRoutes(server: FastifyInstance, shares: ChatShares, files: SessionFiles): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const tags = ['sharing'];
  app.post(
    '/api/sessions/:id/shares',
    {
      schema: {
        tags,
        summary: 'Makes a read-only link to the chat as it stands now (its owner only); the token is in this answer only',
        params: SessionParams,
        body: CreateShare,
        response: { 201: ShareInfo, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await shares.create(request.params.id, viewer(request), request.body)),
  );
  app.get(
    '/api/sessions/:id/shares',
    {
      schema: {
        tags,
        summary: 'The chat’s read-only links, oldest first (its owner only)',
        params: SessionParams,
        response: { 200: ShareList, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => ({ shares: await shares.list(request.params.id, viewer(request)) }),
  );
  app.delete(
    '/api/sessions/:id/shares/:shareId',
    {
      schema: {
        tags,
        summary: 'Revokes a read-only link: it shows nothing from now on, on every instance',
        params: SessionParams.extend({ shareId: z.string().describe('The link’s id') }),
        response: { 204: z.null().describe('Revoked'), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await shares.revoke(request.params.id, request.params.shareId, viewer(request));
      return reply.code(204).send(null);
    },
  );
  app.get(
    '/api/shared/:token',
    {
      ...OPEN_TO_THE_LINK,
      schema: {
        tags,
        summary: 'The chat a link shows, as it stood when the link was made; open to anyone with the link',
        security: [],
        params: TokenParams,
        response: { 200: SharedChat, ...errorResponses(404) },
      },
    },
    (request) => shares.open(request.params.token),
  );
  app.get(
    '/api/shared/:token/files/:name',
    {
      ...OPEN_TO_THE_LINK,
      schema: {
        tags,
        summary: 'Downloads a file of a shared chat, when its link shows files (always as an attachment)',
        security: [],
        params: TokenParams.extend({ name: z.string().describe('The file name') }),
        response: { 200: mediaResponse('The file’s bytes', { 'application/octet-stream': Binary }), ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const sessionId = await shares.filesOf(request.params.token);
      return sendDownload(reply as FastifyReply, await files.openForDownload(sessionId, request.params.name));
    },
  );
  app.post(
    '/api/shared/:token/copy',
    {
      schema: {
        tags,
        summary: 'Copies a shared chat, as the link shows it, into a new chat of the signed-in person, to go on with',
        params: TokenParams,
        response: { 201: ChatCopy, ...errorResponses(401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await shares.copy(request.params.token, viewer(request))),
  );
}

/** A download's name from a chat's title: its words, joined by hyphens. */
function fileName(title: string | null): string {
  const words = (title ?? '').normalize('NFKD').match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.join('-').slice(0, 60).replace(/-+$/, '') || 'chat';
}
