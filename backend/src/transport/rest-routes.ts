import type { FastifyInstance, FastifyReply } from 'fastify';
import { HistoryError, type HistoryService } from '../chat/history-service.ts';

/** The history API: glue from HTTP to HistoryService, and its errors to JSON. */
export function registerRestRoutes(app: FastifyInstance, history: HistoryService): void {
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof HistoryError) return sendError(reply, error.status, error.code, error.message);
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, status, status >= 500 ? 'internal_error' : 'bad_request', status >= 500 ? 'Internal error' : (error as Error).message);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, 404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`));

  app.get<{ Querystring: { limit?: string } }>('/api/sessions', async (request) => {
    const limit = request.query.limit === undefined ? 100 : Number(request.query.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 500) {
      throw new HistoryError(400, 'invalid_query', 'limit must be an integer from 1 to 500');
    }
    return { sessions: await history.list(limit) };
  });
  app.get<{ Params: { id: string } }>('/api/sessions/:id', (request) => history.get(request.params.id));
  app.get<{ Params: { id: string }; Querystring: { after_seq?: string } }>('/api/sessions/:id/events', (request) =>
    history.events(request.params.id, request.query.after_seq),
  );
  app.delete<{ Params: { id: string } }>('/api/sessions/:id', async (request, reply) => {
    await history.delete(request.params.id);
    return reply.code(204).send();
  });
}

function sendError(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).type('application/json').send({ error: { code, message } });
}
