import { randomBytes } from 'node:crypto';
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
  registerOwnWebhookRoutes(server, subscriptions);
}

const OwnWebhook = z.object({
  url: z.string().nullable().describe('Where the person’s notifications are posted; null when they set none'),
  secret: z.string().nullable().describe('The secret their deliveries are signed with (Standard Webhooks, `whsec_…`); theirs alone'),
});

/** A person's own webhook URL: https, or http on this machine (a receiver beside the server). */
export function allowedWebhookUrl(value: string): boolean {
  const url = new URL(value);
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  return url.protocol === 'https:' || (url.protocol === 'http:' && loopback);
}

/**
 * A person's own webhook (multi-user modes, and the one person of a single-user server): their
 * notifications are posted there too, signed like NOTIFY_WEBHOOK_URL's with a secret of their own.
 */
function registerOwnWebhookRoutes(server: FastifyInstance, webhooks: PushStore): void {
  const app = server.withTypeProvider<ZodTypeProvider>();
  const tags = ['notifications'];
  app.get(
    '/api/notify/webhook',
    {
      schema: {
        tags,
        summary: 'The person’s own webhook, and the secret its deliveries are signed with',
        response: { 200: OwnWebhook, ...errorResponses(401) },
      },
    },
    async (request) => {
      const webhook = await webhooks.webhookOf(viewer(request).id);
      return { url: webhook?.url ?? null, secret: webhook?.secret ?? null };
    },
  );
  app.put(
    '/api/notify/webhook',
    {
      schema: {
        tags,
        summary: 'Sets the person’s own webhook: their notifications are posted there too, signed with their own secret (made once, kept)',
        body: z.object({ url: z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }).max(2048) }),
        response: { 200: OwnWebhook, ...errorResponses(400, 401) },
      },
    },
    async (request, reply) => {
      if (!allowedWebhookUrl(request.body.url)) return sendError(reply, 400, 'bad_request', 'A webhook must be https (http only on this machine)');
      const user = viewer(request).id;
      const secret = (await webhooks.webhookOf(user))?.secret ?? `whsec_${randomBytes(24).toString('base64')}`;
      await webhooks.setWebhook(user, { url: request.body.url, secret });
      return { url: request.body.url, secret };
    },
  );
  app.delete(
    '/api/notify/webhook',
    { schema: { tags, summary: 'Removes the person’s own webhook', response: { 204: z.null().describe('Removed'), ...errorResponses(401) } } },
    async (request, reply) => {
      await webhooks.setWebhook(viewer(request).id, null);
      return reply.code(204).send(null);
    },
  );
}
