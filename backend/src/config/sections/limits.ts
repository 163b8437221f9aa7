import { z } from 'zod';
import { integer, section } from '../env-values.ts';
import { TRUSTED_PROXIES } from './access.ts';

/** How much one socket, address or user may ask of the server, and how much the server does at once. */
export const limitsSection = section(
  z.object({
    MAX_MESSAGES_PER_SECOND: integer(1).default(20),
    MAX_SOCKETS_PER_ADDRESS: integer(1).default(20),
    MAX_CONNECTIONS_PER_ADDRESS: integer(1).default(64),
    REQUEST_TIMEOUT_MS: integer(1).default(120_000),
    MAX_UPLOADS_PER_CLIENT: integer(1).default(16),
    EVENTS_BYTES_PER_MINUTE: integer(1024).default(64 * 1024 * 1024),
    MAX_CONCURRENT_RUNS: integer(1).default(100),
    MAX_RUNS_PER_ADDRESS: integer(1).optional(),
    SOCKET_MAX_BUFFERED_BYTES: integer(64 * 1024).default(8 * 1024 * 1024),
    SOCKET_SLOW_TIMEOUT_MS: integer(1).default(10_000),
    SOCKET_BATCH_MS: integer(0).default(10),
    CHAT_TIMEOUT_MS: integer(1).default(10 * 60_000),
    TRUSTED_PROXIES: TRUSTED_PROXIES.optional(),
    MAX_RUNS_PER_USER: integer(1).optional(),
    MAX_MESSAGES_PER_SECOND_PER_USER: integer(1).optional(),
    REST_MAX_REQUESTS_PER_MINUTE: integer(1).default(1200),
  }),
  (env) => ({
    limits: {
      messagesPerSecond: env.MAX_MESSAGES_PER_SECOND,
      socketsPerAddress: env.MAX_SOCKETS_PER_ADDRESS,
      concurrentRuns: env.MAX_CONCURRENT_RUNS,
      /** One client address's share of the concurrent runs: by default a quarter of them (at least one), so nobody takes all. */
      runsPerAddress: Math.min(env.MAX_CONCURRENT_RUNS, env.MAX_RUNS_PER_ADDRESS ?? Math.max(1, Math.ceil(env.MAX_CONCURRENT_RUNS / 4))),
      /** A socket whose unsent bytes stay above this for `slowSocketTimeoutMs` is closed (1013). */
      socketMaxBufferedBytes: env.SOCKET_MAX_BUFFERED_BYTES,
      slowSocketTimeoutMs: env.SOCKET_SLOW_TIMEOUT_MS,
      /** A run's progress goes out to a client at most once per this many milliseconds while it comes faster (0: each turn's at once). */
      socketBatchMs: env.SOCKET_BATCH_MS,
      /** A plain chat answer's wall-clock budget. */
      chatTimeoutMs: env.CHAT_TIMEOUT_MS,
      /** TCP connections one address may hold open (any kind); `trustedProxies` are not capped. */
      connectionsPerAddress: env.MAX_CONNECTIONS_PER_ADDRESS,
      /**
       * TRUSTED_PROXIES (in any mode): they carry everyone's connections, so no per-address limit is
       * theirs; a request through them counts against the address they forward (X-Forwarded-For).
       */
      trustedProxies: env.TRUSTED_PROXIES ?? [],
      /** The longest a request (its headers and whole body) may take to arrive; then 408 and the connection closes. */
      requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
      /** Uploads one client (user or address) may have going at once. */
      uploadsPerClient: env.MAX_UPLOADS_PER_CLIENT,
      /** Bytes of chat event logs one client (user or address) may read a minute through the events API. */
      eventsBytesPerMinute: env.EVENTS_BYTES_PER_MINUTE,
    },
    /** Per-user quotas (multi-user modes; per address when nobody signs in). */
    quotas: {
      runsPerUser: env.MAX_RUNS_PER_USER,
      messagesPerSecondPerUser: env.MAX_MESSAGES_PER_SECOND_PER_USER ?? 2 * env.MAX_MESSAGES_PER_SECOND,
      restPerMinute: env.REST_MAX_REQUESTS_PER_MINUTE,
    },
  }),
);
