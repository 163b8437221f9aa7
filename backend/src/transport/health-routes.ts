import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Readiness } from '../hosting/readiness.ts';
import type { RunHost } from '../hosting/run-host.ts';
import { PUBLIC_ROUTE } from './access.ts';
import { errorResponses } from './openapi.ts';

/** Open to anyone, and answered whatever the Host header says (a probe names the pod's address). */
const HEALTH_ROUTE = { config: { ...PUBLIC_ROUTE.config, health: true } };
/** Open as they are, these routes still refuse a connection past its address's cap (connection-limits.ts). */
const REFUSED_CONNECTION = errorResponses(429);

const Dependencies = z.record(z.string(), z.boolean()).describe('Each shared dependency (PostgreSQL, Redis, Restate) and whether it answers');

/**
 * The health checks: `/api/health/live` (the process serves; a liveness probe restarts it when
 * not), `/api/health/ready` (send it work: its dependencies answer and it is not shutting down)
 * and `/api/health`, the older check, which says what the dependencies do.
 */
export function registerHealthRoutes(app: FastifyInstance, host: RunHost, readiness: Readiness): void {
  const instance = () => (host.instanceId ? { instance: host.instanceId } : {});

  app.get(
    '/api/health/live',
    {
      ...HEALTH_ROUTE,
      schema: {
        tags: ['meta'],
        summary: 'Liveness: the process serves HTTP (also while it shuts down); open to anyone',
        security: [],
        response: { 200: z.object({ status: z.literal('ok') }), ...REFUSED_CONNECTION },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/api/health/ready',
    {
      ...HEALTH_ROUTE,
      schema: {
        tags: ['meta'],
        summary: 'Readiness: its dependencies answer and it is not shutting down (503 otherwise); open to anyone',
        security: [],
        response: {
          200: z.object({ status: z.literal('ready'), instance: z.string().optional(), dependencies: Dependencies }),
          503: z.object({ status: z.enum(['draining', 'degraded']), instance: z.string().optional(), dependencies: Dependencies }),
          ...REFUSED_CONNECTION,
        },
      },
    },
    async (_request, reply) => {
      if (readiness.draining) return reply.code(503).send({ status: 'draining', ...instance(), dependencies: {} });
      const dependencies = await host.health();
      const ok = Object.values(dependencies).every(Boolean);
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'degraded', ...instance(), dependencies });
    },
  );

  // With several instances it also says which shared dependencies answer (503 while one does not).
  app.get(
    '/api/health',
    {
      ...HEALTH_ROUTE,
      schema: {
        tags: ['meta'],
        summary: 'Whether the server (and, with several instances or Restate, what it depends on) answers; open to anyone',
        security: [],
        response: {
          200: z.object({ status: z.enum(['ok', 'degraded']), instance: z.string().optional(), dependencies: Dependencies.optional() }),
          503: z.object({ status: z.literal('degraded'), instance: z.string().optional(), dependencies: Dependencies }),
          ...REFUSED_CONNECTION,
        },
      },
    },
    async (_request, reply) => {
      const dependencies = await host.health();
      if (Object.keys(dependencies).length === 0) return { status: 'ok' as const };
      const ok = Object.values(dependencies).every(Boolean);
      return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'degraded', ...instance(), dependencies });
    },
  );
}
