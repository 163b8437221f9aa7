import fastifySwagger from '@fastify/swagger';
import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors, jsonSchemaTransform, validatorCompiler } from 'fastify-type-provider-zod';
import { ApiError } from '@stepwise/shared-types';
import { z } from 'zod';
import type { ErrorCode } from '@stepwise/shared-types';

/** The error responses a route may give, each the one error shape. */
export function errorResponses(...statuses: number[]): Record<number, typeof ApiError> {
  return Object.fromEntries(statuses.map((status) => [status, ApiError]));
}

/** A session id in a path. */
export const SessionParams = z.object({ id: z.string().describe('The session id (a UUID)') });

/**
 * The REST API described at `GET /api/openapi.json` (OpenAPI 3.1), from each route's schema: its
 * parameters, query and body are the shared zod schemas (and are validated against them), its
 * responses the shared schemas of what it returns and the one error shape. Responses are sent as
 * they are (JSON.stringify), not checked again on the way out.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Stepwise',
        // The wire protocol's version (docs/PROTOCOL.md).
        version: '1',
        description:
          'The REST API of a Stepwise server. Chats run over the WebSocket at /ws (see docs/PROTOCOL.md); these routes read the history, manage files, and report health and metrics. When the server has an access token, every route but /api/health needs it as `Authorization: Bearer TOKEN`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    // The web app's files and the socket's upgrade are not REST routes.
    hideUntagged: true,
  });
  app.get('/api/openapi.json', { schema: { tags: ['meta'], summary: 'This description of the API (OpenAPI 3.1)' } }, () => app.swagger());
}

/** A request that did not fit its route's schema: what was wrong, as the API's error codes say it. */
export function validationRefusal(error: FastifyError): { status: number; code: ErrorCode; message: string } | undefined {
  if (!hasZodFastifySchemaValidationErrors(error)) return undefined;
  const issue = error.validation[0];
  const where = error.validationContext ?? 'request';
  const field = issue?.instancePath?.replace(/^\//, '').replaceAll('/', '.') ?? '';
  const message = `${where}${field ? `.${field}` : ''}: ${issue?.message ?? 'invalid'}`;
  const code: ErrorCode = where === 'querystring' ? 'invalid_query' : where === 'params' ? 'invalid_id' : 'bad_request';
  return { status: 400, code, message };
}
