import { z } from 'zod';
import { ConfigError } from '../../errors.ts';
import { choice, integer, list, nonEmpty, section, unset, url } from '../env-values.ts';

/** This instance's name among several (letters, digits, ".", "_", "-"); traces name it too. */
export const INSTANCE_ID = z
  .string()
  .trim()
  .regex(/^[\w.-]{1,64}$/, 'letters, digits, ".", "_" or "-", at most 64');

/** Where chats are kept, how instances share them, and where runs execute. */
export const storeSection = section(
  z.object({
    DATA_DIR: nonEmpty.default('./data'),
    DATABASE_URL: z
      .string()
      .trim()
      .pipe(z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }))
      .optional(),
    REDIS_URL: z
      .string()
      .trim()
      .pipe(z.url({ protocol: /^rediss?$/, error: 'must be a redis:// URL' }))
      .optional(),
    INSTANCE_ID: INSTANCE_ID.optional(),
    CLUSTER_LEASE_MS: integer(500, 600_000).default(5_000),
    RUN_ENGINE: choice(['in-process', 'restate'], 'must be in-process or restate').default('in-process'),
    RESTATE_INGRESS_URL: url.optional(),
    RESTATE_ADMIN_URL: url.optional(),
    RESTATE_SERVICE_PORT: integer(0, 65535).default(9080),
    RESTATE_SERVICE_HOST: nonEmpty.default('127.0.0.1'),
    RESTATE_SERVICE_URL: url.optional(),
    RESTATE_IDENTITY_KEYS: list.pipe(z.array(z.string().regex(/^publickeyv1_\w+$/, 'each must be a Restate public key (publickeyv1_…)'))).optional(),
    DB_SYNC: choice(['normal', 'full'], 'must be normal or full').default('normal'),
  }),
  (env) => {
    if (env.REDIS_URL && !env.DATABASE_URL) {
      throw new ConfigError('Invalid REDIS_URL: several instances share PostgreSQL too; set DATABASE_URL as well');
    }
    const missing = unset([
      ['RESTATE_INGRESS_URL', env.RESTATE_INGRESS_URL],
      ['RESTATE_ADMIN_URL', env.RESTATE_ADMIN_URL],
    ]);
    if (env.RUN_ENGINE === 'restate' && missing.length > 0) {
      throw new ConfigError(`Invalid RUN_ENGINE: restate needs RESTATE_INGRESS_URL and RESTATE_ADMIN_URL (missing: ${missing.join(', ')})`);
    }
    return {
      dataDir: env.DATA_DIR,
      /** A PostgreSQL server to use instead of the embedded database. */
      databaseUrl: env.DATABASE_URL,
      /** Several instances (REDIS_URL with DATABASE_URL): where they meet, this one's id, how long a lease lasts. */
      cluster:
        env.REDIS_URL && env.DATABASE_URL
          ? { redisUrl: env.REDIS_URL, databaseUrl: env.DATABASE_URL, instanceId: env.INSTANCE_ID, leaseMs: env.CLUSTER_LEASE_MS }
          : undefined,
      /**
       * RUN_ENGINE=restate: runs execute as Restate workflows served by this process on `servicePort`
       * (registered with Restate at `serviceUrl`); absent for the in-process engine.
       */
      restate:
        env.RUN_ENGINE === 'restate' && env.RESTATE_INGRESS_URL && env.RESTATE_ADMIN_URL
          ? {
              ingressUrl: env.RESTATE_INGRESS_URL.replace(/\/+$/, ''),
              adminUrl: env.RESTATE_ADMIN_URL.replace(/\/+$/, ''),
              servicePort: env.RESTATE_SERVICE_PORT,
              serviceHost: env.RESTATE_SERVICE_HOST,
              serviceUrl: (
                env.RESTATE_SERVICE_URL ??
                `http://${env.RESTATE_SERVICE_HOST.includes(':') ? `[${env.RESTATE_SERVICE_HOST}]` : env.RESTATE_SERVICE_HOST}:${env.RESTATE_SERVICE_PORT}`
              ).replace(/\/+$/, ''),
              /** Restate's public keys: requests to the workflow endpoint must be signed with one of them. */
              identityKeys: env.RESTATE_IDENTITY_KEYS ?? [],
            }
          : undefined,
      /**
       * How the embedded SQLite database syncs its write-ahead log: `full` fsyncs at every commit (an
       * acknowledged write survives a power cut); `normal` only at checkpoints (it survives a crash of
       * the process, not of the machine) and commits several times faster.
       */
      dbSync: env.DB_SYNC,
    };
  },
);
