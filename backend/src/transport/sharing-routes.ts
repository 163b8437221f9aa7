import { SearchResults } from '@stepwise/shared-types';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ChatSearch } from '../chat/chat-search.ts';
import { errorResponses } from './openapi.ts';
import { viewer } from './rest-routes.ts';

/** What people bring and take away: search across chats. Glue from HTTP to the services; errors as the history API's. */
export function registerSharingRoutes(server: FastifyInstance, services: { search: ChatSearch }): void {
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
}
