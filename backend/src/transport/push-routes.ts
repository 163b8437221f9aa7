import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Notifier } from '../notify/notifier.ts';
import type { PushStore } from '../store/push-store.ts';
import { errorResponses } from './openapi.ts';
import { sendError, viewer } from './rest-routes.ts';

const PushKey = z.object({ public_key: z.string().describe('The server’s VAPID public key (base64url), the applicationServerKey to subscribe with') });
const Subscription = z.object({
  endpoint: z.url({ protocol: /^https?$/, error: 'endpoint must be the push service’s URL' }).max(2048),
  keys: z.object({ p256dh: z.string().min(1).max(200), auth: z.string().min(1).max(100) }),
});
const Unsubscription = z.object({ endpoint: z.string().max(2048) });

/** Whether a push endpoint is at one of the allowed push services (https; http only on this machine, for tests). */
export function allowedPushEndpoint(endpoint: string, hosts: readonly string[]): boolean {
  const url = new URL(endpoint);
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !loopback) return false;
  return hosts.some((host) => (host.startsWith('*.') ? url.hostname.endsWith(host.slice(1)) : url.hostname === host));
}

/**
 * Web Push: the server's public key, and the person's browsers subscribing and unsubscribing.
 * Notifications then reach those browsers with the app closed (their service worker shows them).
 */
export function registerPushRoutes(server: FastifyInstance, notifier: Notifier, subscriptions: PushStore, hosts: readonly string[]): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const tags = ['notifications'];
  app.get(
    '/api/push/key',
    {
      schema: {
        tags,
        summary: 'The public key (VAPID) a browser subscribes to this server’s push messages with',
        response: { 200: PushKey, ...errorResponses(401) },
      },
    },
    async () => ({ public_key: await notifier.publicKey() }),
  );
  app.post(
    '/api/push/subscriptions',
    {
      schema: {
        tags,
        summary: 'Keeps a browser’s push subscription (PushSubscription.toJSON()) for the person: notifications reach it with the app closed',
        body: Subscription,
        response: { 201: z.object({ subscribed: z.literal(true) }), ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      if (!allowedPushEndpoint(request.body.endpoint, hosts)) {
        return sendError(reply, 400, 'push_service_refused', 'That endpoint is not at a known push service (PUSH_SERVICE_HOSTS lists the hosts allowed)');
      }
      await subscriptions.subscribe({ endpoint: request.body.endpoint, userId: viewer(request).id, ...request.body.keys });
      return reply.code(201).send({ subscribed: true as const });
    },
  );
  app.delete(
    '/api/push/subscriptions',
    {
      schema: {
        tags,
        summary: 'Forgets one of the person’s push subscriptions (the browser unsubscribed, or notifications were turned off)',
        body: Unsubscription,
        response: { 204: z.null().describe('Forgotten'), ...errorResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      if (!(await subscriptions.unsubscribe(viewer(request).id, request.body.endpoint))) return sendError(reply, 404, 'not_found', 'No such subscription');
      return reply.code(204).send(null);
    },
  );
}
