import fastifySwagger from '@fastify/swagger';
import type { FastifyError, FastifyInstance } from 'fastify';
import {
  createJsonSchemaTransform,
  createJsonSchemaTransformObject,
  hasZodFastifySchemaValidationErrors,
  type jsonSchemaTransform,
  validatorCompiler,
} from 'fastify-type-provider-zod';
import * as wire from '@stepwise/shared-types';
import { ApiError } from '@stepwise/shared-types';
import { z } from 'zod';
import type { ErrorCode } from '@stepwise/shared-types';

/** The error responses a route may give, each the one error shape. */
export function errorResponses(...statuses: number[]): Record<number, typeof ApiError> {
  return Object.fromEntries(statuses.map((status) => [status, ApiError]));
}

/**
 * The wire contract's schemas by their names (`ApiError`, `SessionSummary`, …): the description
 * names them as components and refers to them, so a generator makes one type of each.
 */
const NAMED = z.registry<{ id: string }>();
for (const [name, value] of Object.entries(wire)) if (/^[A-Z]/.test(name) && value instanceof z.ZodType && !NAMED.has(value)) NAMED.add(value, { id: name });
const namedTransform = createJsonSchemaTransform({ schemaRegistry: NAMED });
const namedComponents = createJsonSchemaTransformObject({ schemaRegistry: NAMED });

/** The description with only the named schemas something refers to (every name is offered, as input and as output). */
function usedComponentsOnly<T extends { paths?: unknown; components?: unknown }>(document: T): T {
  const components = document.components as { schemas?: Record<string, unknown> } | undefined;
  const schemas = components?.schemas;
  if (!schemas) return document;
  const used = new Set<string>();
  const visit = (value: unknown) => {
    for (const [, name] of JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (used.has(name!) || !(name! in schemas)) continue;
      used.add(name!);
      visit(schemas[name!]);
    }
  };
  visit(document.paths);
  return { ...document, components: { ...components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) } };
}

/** A response of other media types than JSON, each with its schema (as the description shows it; sent as it is). */
export function mediaResponse(description: string, types: Record<string, z.ZodType>) {
  return { description, content: Object.fromEntries(Object.entries(types).map(([type, schema]) => [type, { schema }])) };
}

/** Bytes as the description shows them (a file's, a protobuf stream's). */
export const Binary = z.string().meta({ format: 'binary' });

/** Request bodies no parser reads (the handler streams them), as the description shows them, by `METHOD url`. */
const RAW_BODIES: Record<string, { description: string; content: Record<string, { schema: object }>; required: true }> = {
  'POST /api/sessions/:id/files': {
    description: 'The file’s bytes, of any content type',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    required: true,
  },
};

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
      // Paths are relative to wherever the server is reached (behind a proxy, under its public origin).
      servers: [{ url: '/', description: 'This Stepwise server' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: withOperationId,
    transformObject: (input) => usedComponentsOnly(namedComponents(input)),
    // The web app's files and the socket's upgrade are not REST routes.
    hideUntagged: true,
  });
  app.get(
    '/api/openapi.json',
    {
      schema: {
        tags: ['meta'],
        summary: 'This description of the API (OpenAPI 3.1)',
        response: { 200: z.record(z.string(), z.unknown()), ...errorResponses(401) },
      },
    },
    () => app.swagger(),
  );
}

/**
 * Each route's description with an `operationId` (what client generators name their methods
 * after), made from its method and path when the route names none: `GET /api/sessions/:id/files`
 * is `getSessionsByIdFiles`.
 */
const withOperationId: typeof jsonSchemaTransform = (input) => {
  const transformed = namedTransform(input);
  const schema = transformed.schema as Record<string, unknown> | undefined;
  // A route with no description (the web app's pages) is no operation of the API.
  if (!schema || schema.operationId) return transformed;
  const method = String(Array.isArray(input.route.method) ? input.route.method[0] : input.route.method).toLowerCase();
  const raw = RAW_BODIES[`${method.toUpperCase()} ${input.url}`];
  return { ...transformed, schema: { ...schema, operationId: operationIdOf(method, input.url), ...(raw ? { body: raw } : {}) } } as typeof transformed;
};

/** `get` + `/api/sessions/:id/files` → `getSessionsByIdFiles`. */
export function operationIdOf(method: string, url: string): string {
  const words = url
    .replace(/^\/api(?=\/|$)/, '')
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => (segment.startsWith(':') ? ['by', segment.slice(1)] : segment.split(/[^a-zA-Z0-9]+/)))
    .filter(Boolean);
  return method + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
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
