import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import { integer, list, nonEmpty, section, url } from '../env-values.ts';

/** The push services of the browsers people use (Chrome, Firefox, Edge, Safari); a subscription elsewhere is refused. */
const DEFAULT_PUSH_SERVICE_HOSTS = ['fcm.googleapis.com', '*.push.services.mozilla.com', '*.notify.windows.com', '*.push.apple.com'];

/** Where notifications go: a webhook (NOTIFY_WEBHOOK_URL, signed with NOTIFY_WEBHOOK_SECRET) and Web Push. */
export const notifySection = section(
  z.object({
    NOTIFY_WEBHOOK_URL: url.optional(),
    NOTIFY_WEBHOOK_SECRET: z
      .string()
      .trim()
      .regex(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/, 'must be "whsec_" and a base64 key of at least 24 bytes (Standard Webhooks)')
      .optional(),
    NOTIFY_RETRY_BASE_MS: integer(10).default(5_000),
    VAPID_PUBLIC_KEY: nonEmpty.optional(),
    VAPID_PRIVATE_KEY: nonEmpty.optional(),
    VAPID_SUBJECT: z
      .string()
      .trim()
      .regex(/^(mailto:|https:\/\/)/, 'must be a mailto: address or an https: URL')
      .optional(),
    PUSH_SERVICE_HOSTS: list.optional(),
  }),
  (env) => {
    if (env.NOTIFY_WEBHOOK_URL && !env.NOTIFY_WEBHOOK_SECRET) {
      throw new ConfigError('Invalid NOTIFY_WEBHOOK_URL: webhooks are signed; set NOTIFY_WEBHOOK_SECRET as well (whsec_ and a base64 key)');
    }
    if (Boolean(env.VAPID_PUBLIC_KEY) !== Boolean(env.VAPID_PRIVATE_KEY)) {
      throw new ConfigError('Invalid VAPID_PUBLIC_KEY: set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY together (or neither: the server makes a pair and keeps it)');
    }
    return {
      /** Notifications: a webhook, and how soon a failed delivery is tried again (doubling from there). */
      notify: {
        webhook: env.NOTIFY_WEBHOOK_URL && env.NOTIFY_WEBHOOK_SECRET ? { url: env.NOTIFY_WEBHOOK_URL, secret: env.NOTIFY_WEBHOOK_SECRET } : undefined,
        retryBaseMs: env.NOTIFY_RETRY_BASE_MS,
        /** Web Push: the server's key pair when VAPID_* gives it (else made and kept in the store), and its contact. */
        vapid: { publicKey: env.VAPID_PUBLIC_KEY, privateKey: env.VAPID_PRIVATE_KEY, subject: env.VAPID_SUBJECT },
        /** Hosts a browser's push subscription may point at (`*.` for any subdomain); PUSH_SERVICE_HOSTS. */
        pushServiceHosts: env.PUSH_SERVICE_HOSTS ?? DEFAULT_PUSH_SERVICE_HOSTS,
      },
    };
  },
);
