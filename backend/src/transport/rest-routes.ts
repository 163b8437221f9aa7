import type { ErrorCode } from '@stepwise/shared-types';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HistoryError, type HistoryService } from '../chat/history-service.ts';
import { FileError } from '../errors.ts';
import { SessionFiles } from '../files/session-files.ts';

/** The history and files API: glue from HTTP to HistoryService and SessionFiles, and their errors to JSON. */
export function registerRestRoutes(app: FastifyInstance, history: HistoryService, files: SessionFiles): void {
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof HistoryError) return sendError(reply, error.status, error.code, error.message);
    if (error instanceof FileError) {
      // The rest of a refused upload is not read; the connection closes rather than swallow it.
      if (request.method === 'POST') reply.header('connection', 'close');
      return sendError(reply, error.status, error.code, error.message);
    }
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
  app.get<{ Params: { id: string } }>('/api/sessions/:id/snapshots', (request) => history.snapshots(request.params.id));
  app.get<{ Params: { id: string }; Querystring: { after_seq?: string; limit?: string } }>('/api/sessions/:id/events', (request) => {
    const afterSeq = request.query.after_seq === undefined ? 0 : Number(request.query.after_seq);
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
      throw new HistoryError(400, 'invalid_query', 'after_seq must be a non-negative integer');
    }
    const limit = request.query.limit === undefined ? 1000 : Number(request.query.limit);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000) {
      throw new HistoryError(400, 'invalid_query', 'limit must be an integer from 1 to 10000');
    }
    return history.events(request.params.id, afterSeq, limit);
  });
  app.delete<{ Params: { id: string } }>('/api/sessions/:id', async (request, reply) => {
    await history.delete(request.params.id);
    return reply.code(204).send();
  });
  registerFileRoutes(app, history, files);
}

/**
 * Session files: `POST /api/sessions/:id/files?name=NAME` with the file's bytes as the body (any
 * content type; streamed to disk, cut off at FILE_MAX_BYTES), list, download, delete.
 */
function registerFileRoutes(app: FastifyInstance, history: HistoryService, files: SessionFiles): void {
  app.get<{ Params: { id: string } }>('/api/sessions/:id/files', async (request) => {
    await history.requireSession(request.params.id);
    return { files: await files.list(request.params.id) };
  });
  app.get<{ Params: { id: string; name: string } }>('/api/sessions/:id/files/:name', async (request, reply) => {
    await history.requireSession(request.params.id);
    const file = await files.openForDownload(request.params.id, request.params.name);
    // Always a download, never rendered: an uploaded .html must not run in this origin.
    return reply
      .type('application/octet-stream')
      .header('content-length', file.size)
      .header('content-disposition', contentDisposition(file.name))
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; sandbox")
      .send(file.stream);
  });
  app.delete<{ Params: { id: string; name: string } }>('/api/sessions/:id/files/:name', async (request, reply) => {
    await history.requireSession(request.params.id);
    await files.remove(request.params.id, request.params.name);
    return reply.code(204).send();
  });
  app.register(async (uploads) => {
    // Uploads are raw bytes of any type: no parser reads them; the handler streams request.raw.
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    uploads.post<{ Params: { id: string }; Querystring: { name?: string } }>('/api/sessions/:id/files', async (request, reply) => {
      await history.requireSession(request.params.id, { write: true });
      const name = SessionFiles.uploadName(request.query.name);
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > files.maxBytes) {
        throw new FileError('file_too_large', `Files are limited to ${files.maxBytes} bytes; this one has ${declared}`);
      }
      const file = await files.write(request.params.id, name, request.raw, { source: 'user' });
      return reply.code(201).send({ file });
    });
  });
}

/** An attachment header that survives any file name: an ASCII fallback and the UTF-8 original. */
function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

function sendError(reply: FastifyReply, status: number, code: ErrorCode, message: string) {
  return reply.code(status).type('application/json').send({ error: { code, message } });
}
