import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterEach, describe, expect, it } from 'vitest';
import { startStepwise, type TestServer } from '../helpers/stepwise.ts';

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface OpenApiDocument {
  openapi: string;
  info: { title: string };
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; required?: boolean; schema: Record<string, unknown> }[];
        responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
        summary?: string;
      }
    >
  >;
}

async function openApi(headers: Record<string, string> = {}): Promise<OpenApiDocument> {
  const response = await fetch(`${server!.url}/api/openapi.json`, { headers });
  expect(response.status).toBe(200);
  return (await response.json()) as OpenApiDocument;
}

describe('the REST API described as OpenAPI 3.1', () => {
  it('describes every route with its parameters, responses and the one error shape', async () => {
    server = await startStepwise();
    const document = await openApi();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.title).toBe('Stepwise');
    expect(Object.keys(document.paths).sort()).toEqual(
      expect.arrayContaining([
        '/api/health',
        '/api/openapi.json',
        '/api/sessions',
        '/api/sessions/{id}',
        '/api/sessions/{id}/events',
        '/api/sessions/{id}/files',
        '/api/sessions/{id}/files/{name}',
        '/api/sessions/{id}/snapshots',
        '/metrics',
      ]),
    );
    // The web app's files and the socket's upgrade are not REST routes.
    expect(Object.keys(document.paths).some((path) => path === '/' || path === '/ws')).toBe(false);
    const events = document.paths['/api/sessions/{id}/events']!.get!;
    expect(events.parameters!.map((parameter) => `${parameter.in}:${parameter.name}`).sort()).toEqual(['path:id', 'query:after_seq', 'query:limit']);
    expect(events.parameters!.find((parameter) => parameter.name === 'limit')!.schema).toMatchObject({ minimum: 1, maximum: 10000, default: 1000 });
    // The one error shape is a named component every error response refers to.
    expect(events.responses['400']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/ApiError' });
    const error = (document as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas.ApiError;
    expect(error).toMatchObject({
      type: 'object',
      properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } } },
    });
    const list = document.paths['/api/sessions']!.get!.responses['200']!.content!['application/json']!.schema;
    expect(list).toEqual({ $ref: '#/components/schemas/SessionList' });
    expect(document.paths['/api/sessions/{id}']!.delete!.summary).toMatch(/Deletes a chat/);
    expect(document.paths['/api/sessions/{id}/files']!.post!.responses['413']).toBeDefined();
  });

  it('fits client generators: Redocly’s recommended rules find no error, every operation has a unique operationId', async () => {
    server = await startStepwise();
    const source = await (await fetch(`${server.url}/api/openapi.json`)).text();
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config: await createConfig({ extends: ['recommended'] }) });
    const found = problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.location[0]?.pointer ?? ''}`);
    // A license is the project's to choose; the description names none.
    expect(found.filter((line) => !line.includes('info-license'))).toEqual([]);
    const ids = Object.values((JSON.parse(source) as OpenApiDocument).paths).flatMap((operations) =>
      Object.values(operations).map((operation) => (operation as { operationId?: string }).operationId),
    );
    expect(ids.every(Boolean)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('getSessionsByIdFiles');
    // True media types: streams, text and bytes as what they are; the upload's body as bytes.
    const document = JSON.parse(source) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, unknown> }>; requestBody?: { content: Record<string, unknown> } }>
      >;
    };
    const types = (path: string, method: string) => Object.keys(document.paths[path]![method]!.responses['200']!.content ?? {}).sort();
    expect(types('/api/ag-ui', 'post')).toEqual(['application/vnd.ag-ui.event+proto', 'text/event-stream']);
    expect(types('/metrics', 'get')).toEqual(['text/plain']);
    expect(types('/api/sessions/{id}/files/{name}', 'get')).toEqual(['application/octet-stream']);
    expect(types('/api/sessions/{id}/export', 'get')).toEqual(['application/json', 'text/markdown']);
    expect(types('/a2a', 'post')).toEqual(['application/json', 'text/event-stream']);
    expect(Object.keys(document.paths['/api/sessions/{id}/files']!.post!.requestBody!.content)).toEqual(['application/octet-stream']);
  });

  it('validates queries against the same schemas: a bad one is refused with 400 invalid_query naming it', async () => {
    server = await startStepwise();
    const refused = await fetch(`${server.url}/api/sessions?limit=501`);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: { code: 'invalid_query', message: expect.stringContaining('limit must be an integer from 1 to 500') } });
    expect((await fetch(`${server.url}/api/sessions?limit=3`)).status).toBe(200);
  });

  it('needs the access token like every route', async () => {
    const token = 'openapi-test-token-0123456789';
    server = await startStepwise({ AUTH_TOKEN: token });
    expect((await fetch(`${server.url}/api/openapi.json`)).status).toBe(401);
    await openApi({ authorization: `Bearer ${token}` });
  });

  it('serves /metrics as Prometheus text, not as a JSON string', async () => {
    server = await startStepwise();
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text.startsWith('"')).toBe(false);
    expect(text).toContain('# TYPE stepwise_runs_total counter');
  });
});
