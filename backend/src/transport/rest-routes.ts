import { type ErrorCode, SessionDetail, SessionEvents, SessionFile, SessionList, SessionSummary, SnapshotList } from '@stepwise/shared-types';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LOCAL_USER, type User } from '../auth/user.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { HistoryError, type HistoryService } from '../chat/history-service.ts';
import { FileError } from '../errors.ts';
import { SessionFiles } from '../files/session-files.ts';
import type { WorkBudgets } from '../limits/work-budgets.ts';
import type { InProgressPerClient } from './connection-limits.ts';
import { Binary, errorResponses, mediaResponse, SessionParams, validationRefusal } from './openapi.ts';

/** A query parameter that is a whole number from `min` to `max` (it arrives as text). */
const wholeNumber = (min: number, max: number, what: string) =>
  z.coerce
    .number({ error: `${what} must be an integer from ${min} to ${max}` })
    .int(`${what} must be an integer from ${min} to ${max}`)
    .min(min, `${what} must be an integer from ${min} to ${max}`)
    .max(max, `${what} must be an integer from ${min} to ${max}`);

/** How many event pages one client may have built at once. */
export const EVENT_PAGES_IN_FLIGHT = 2;

/** A file of a session, as its list and an upload describe it. */
const FileParams = SessionParams.extend({ name: z.string().describe('The file name') });

/** The history and files API: glue from HTTP to HistoryService and SessionFiles, and their errors to JSON. */
export function registerRestRoutes(
  server: FastifyInstance,
  history: HistoryService,
  files: SessionFiles,
  limits: { eventPages: WorkBudgets; uploads: InProgressPerClient },
): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  app.setErrorHandler((error, request, reply) => {
    const refused = validationRefusal(error as FastifyError);
    if (refused) return sendError(reply, refused.status, refused.code, refused.message);
    if (error instanceof HistoryError) return sendError(reply, error.status, error.code, error.message);
    if (error instanceof FileError) {
      // The rest of a refused upload is not read; the connection closes rather than swallow it.
      if (request.method === 'POST') reply.header('connection', 'close');
      return sendError(reply, error.status, error.code, error.message);
    }
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(
      reply,
      status,
      status >= 500 ? 'internal_error' : status === 429 ? 'rate_limited' : 'bad_request',
      status >= 500 ? 'Internal error' : (error as Error).message,
    );
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, 404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`));

  app.get(
    '/api/sessions',
    {
      schema: {
        tags: ['history'],
        summary: 'The chats, newest activity first',
        querystring: z.object({
          limit: wholeNumber(1, 500, 'limit').default(100),
          scope: z
            .enum(['own', 'all'], { error: 'scope must be own or all' })
            .default('own')
            .describe('all: everyone’s chats, each naming its owner (admins only)'),
        }),
        response: { 200: SessionList, ...errorResponses(400, 401) },
      },
    },
    async (request) => ({ sessions: await history.list(viewer(request), request.query.limit, request.query.scope === 'all') }),
  );
  app.get(
    '/api/sessions/:id',
    {
      schema: {
        tags: ['history'],
        summary: 'A chat: its messages and runs',
        params: SessionParams,
        response: { 200: SessionDetail, ...errorResponses(400, 401, 404) },
      },
    },
    (request) => history.get(request.params.id, viewer(request)),
  );
  app.get(
    '/api/sessions/:id/snapshots',
    {
      schema: {
        tags: ['history'],
        summary: 'A chat’s snapshots, rollbacks and every step’s end, oldest first',
        params: SessionParams,
        response: { 200: SnapshotList, ...errorResponses(400, 401, 404) },
      },
    },
    (request) => history.snapshots(request.params.id, viewer(request)),
  );
  app.get(
    '/api/sessions/:id/events',
    {
      schema: {
        tags: ['history'],
        summary: 'One page of a chat’s event log, from after_seq on',
        params: SessionParams,
        querystring: z.object({
          after_seq: wholeNumber(0, Number.MAX_SAFE_INTEGER, 'after_seq').default(0),
          limit: wholeNumber(1, 10_000, 'limit').default(1000),
        }),
        response: { 200: SessionEvents, ...errorResponses(400, 401, 404, 429) },
      },
    },
    async (request, reply) => {
      // Reading a log costs the server in proportion to its bytes: each client has its share of them (EVENTS_BYTES_PER_MINUTE).
      const begun = limits.eventPages.begin(request.client);
      if (typeof begun !== 'function') {
        if (begun.kind === 'busy')
          return sendError(reply, 429, 'rate_limited', `At most ${EVENT_PAGES_IN_FLIGHT} event pages at once per client; wait for one`);
        const seconds = Math.max(1, Math.ceil(begun.retryAfterMs / 1000));
        reply.header('retry-after', seconds);
        return sendError(
          reply,
          429,
          'rate_limited',
          `This client has read its share of chat events for now (EVENTS_BYTES_PER_MINUTE); try again in ${seconds} s`,
        );
      }
      let cost = 0;
      try {
        const page = await history.events(request.params.id, viewer(request), request.query.after_seq, request.query.limit);
        cost = page.bytes;
        // The page is JSON text already, each event encoded once as it was read.
        return (reply as FastifyReply).type('application/json').send(page.json);
      } finally {
        begun(cost);
      }
    },
  );
  app.patch(
    '/api/sessions/:id',
    {
      schema: {
        tags: ['history'],
        summary: 'Renames a chat (the title is kept from then on)',
        params: SessionParams,
        body: z.object({ title: z.string().trim().min(1, 'title must not be empty').max(200, 'title must be at most 200 characters') }).strict(),
        response: { 200: SessionSummary, ...errorResponses(400, 401, 404) },
      },
    },
    (request) => history.rename(request.params.id, viewer(request), request.body.title),
  );
  app.delete(
    '/api/sessions/:id',
    {
      schema: {
        tags: ['history'],
        summary: 'Deletes a chat, its log and its files',
        params: SessionParams,
        response: { 204: z.null().describe('Deleted'), ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await history.delete(request.params.id, viewer(request));
      return reply.code(204).send(null);
    },
  );
  app.post(
    '/api/sessions/:id/adopt',
    {
      schema: {
        tags: ['history'],
        summary: 'An admin adopts a chat from before sign-in (owned by nobody who can sign in): it becomes theirs',
        params: SessionParams,
        response: { 200: SessionSummary, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    (request) => history.adopt(request.params.id, viewer(request)),
  );
  registerFileRoutes(app, history, files, limits.uploads);
}

/**
 * Session files: `POST /api/sessions/:id/files?name=NAME` with the file's bytes as the body (any
 * content type; streamed to disk, cut off at FILE_MAX_BYTES), list, download, delete.
 */
function registerFileRoutes(server: FastifyInstance, history: HistoryService, files: SessionFiles, uploads: InProgressPerClient): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const tags = ['files'];
  app.get(
    '/api/sessions/:id/files',
    {
      schema: {
        tags,
        summary: 'A chat’s files',
        params: SessionParams,
        response: { 200: z.object({ files: z.array(SessionFile) }), ...errorResponses(400, 401, 404) },
      },
    },
    async (request) => {
      await history.requireSession(request.params.id, viewer(request), 'read');
      return { files: await files.list(request.params.id) };
    },
  );
  app.get(
    '/api/sessions/:id/files/:name',
    {
      schema: {
        tags,
        summary: 'Downloads a file (always as an attachment, never rendered)',
        params: FileParams,
        response: { 200: mediaResponse('The file’s bytes', { 'application/octet-stream': Binary }), ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await history.requireSession(request.params.id, viewer(request), 'read');
      return sendDownload(reply, await files.openForDownload(request.params.id, request.params.name));
    },
  );
  app.delete(
    '/api/sessions/:id/files/:name',
    { schema: { tags, summary: 'Deletes a file', params: FileParams, response: { 204: z.null().describe('Deleted'), ...errorResponses(400, 401, 404) } } },
    async (request, reply) => {
      await history.requireSession(request.params.id, viewer(request), 'write');
      await files.remove(request.params.id, request.params.name);
      return reply.code(204).send(null);
    },
  );
  app.register(async (plugin) => {
    const typed = plugin.withTypeProvider<ZodTypeProvider>();
    // Uploads are raw bytes of any type: no parser reads them; the handler streams request.raw.
    plugin.removeAllContentTypeParsers();
    plugin.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    typed.post(
      '/api/sessions/:id/files',
      {
        schema: {
          tags,
          summary: 'Uploads a file: its bytes are the body (any content type), streamed to disk and cut off at FILE_MAX_BYTES',
          params: SessionParams,
          querystring: z.object({ name: z.string().optional().describe('The file name (required; checked by the server)') }),
          response: { 201: z.object({ file: SessionFile }), ...errorResponses(400, 401, 404, 413, 429) },
        },
      },
      async (request, reply) => {
        // Each upload holds a connection for as long as its body takes: a client has only so many going at once.
        const countOut = uploads.tryAdd(request.client);
        if (!countOut) {
          reply.header('connection', 'close');
          return sendError(reply, 429, 'too_many_connections', `At most ${uploads.limit} uploads at once per client (MAX_UPLOADS_PER_CLIENT)`);
        }
        request.raw.once('close', countOut);
        reply.raw.once('close', countOut);
        await history.requireSession(request.params.id, viewer(request), 'write');
        const name = SessionFiles.uploadName(request.query.name);
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > files.maxBytes) {
          throw new FileError('file_too_large', `Files are limited to ${files.maxBytes} bytes; this one has ${declared}`);
        }
        const file = await files.write(request.params.id, name, request.raw, { source: 'user' });
        return reply.code(201).send({ file });
      },
    );
  });
}

/** Who asks: the access check has named the user of every route here. */
export function viewer(request: FastifyRequest): User {
  return request.user ?? LOCAL_USER;
}

/** An attachment header that survives any file name: an ASCII fallback and the UTF-8 original. */
/** A session file as a download: always an attachment, never rendered (an uploaded .html must not run in this origin). */
export function sendDownload(reply: FastifyReply, file: Awaited<ReturnType<SessionFiles['openForDownload']>>): FastifyReply {
  return reply
    .type('application/octet-stream')
    .header('content-length', file.size)
    .header('content-disposition', contentDisposition(file.name))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .send(file.stream);
}

export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

export function sendError(reply: FastifyReply, status: number, code: ErrorCode, message: string) {
  return reply.code(status).type('application/json').send({ error: { code, message } });
}
