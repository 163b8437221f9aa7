import { ChatExport, SearchResults } from '@stepwise/shared-types';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ChatExporter } from '../chat/chat-export.ts';
import type { ChatSearch } from '../chat/chat-search.ts';
import { errorResponses, SessionParams } from './openapi.ts';
import { viewer } from './rest-routes.ts';

/** What people bring and take away: search across chats, a chat exported. Glue from HTTP to the services; errors as the history API's. */
export function registerSharingRoutes(server: FastifyInstance, services: { search: ChatSearch; exporter: ChatExporter }): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/api/search',
    {
      schema: {
        tags: ['history'],
        summary: 'Searches the titles, user messages and answers of the person’s chats; best match first, the matched words marked',
        querystring: z.object({
          q: z.string({ error: 'q is required' }).max(500, 'q must be at most 500 characters').describe('The words to look for; each must match (a word or its start)'),
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
    (request) =>
      services.search.search(viewer(request), request.query.q, { limit: request.query.limit, everyone: request.query.scope === 'all' }),
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
          200: z
            .union([ChatExport, z.string()])
            .describe('format=json: a ChatExport (application/json); format=markdown: the chat as text/markdown. Sent as an attachment.'),
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
          .header('content-disposition', attachment(`${name}.json`))
          .send(JSON.stringify(chat, null, 2));
      }
      return (reply as FastifyReply)
        .type('text/markdown; charset=utf-8')
        .header('content-disposition', attachment(`${name}.md`))
        .send(services.exporter.markdown(chat));
    },
  );
}

/** A download's name from a chat's title: its words, joined by hyphens. */
function fileName(title: string | null): string {
  const words = (title ?? '').normalize('NFKD').match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.join('-').slice(0, 60).replace(/-+$/, '') || 'chat';
}

/** An attachment header that survives any file name: an ASCII fallback and the UTF-8 original. */
function attachment(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}
