import { z } from 'zod';
import { boolean, integer, nonEmpty, section } from '../env-values.ts';
import { PUBLIC_ORIGIN } from './access.ts';

/** The config file read when STEPWISE_CONFIG names none (a missing one is then no error). */
const DEFAULT_CONFIG_FILE = './stepwise.config.json';

/** Defaults that depend on where the server runs from: the repository's prompts folder (app.ts knows where it is). */
export interface PlaceDefaults {
  promptsDir: string;
}

/** Where the server listens, where it is reached, what it reads at startup, and how it winds down. */
export const serverSection = (defaults: PlaceDefaults) =>
  section(
    z.object({
      PORT: integer(0, 65535).default(8787),
      HOST: nonEmpty.default('127.0.0.1'),
      PUBLIC_ORIGIN: PUBLIC_ORIGIN.optional(),
      STEPWISE_CONFIG: nonEmpty.optional(),
      PROMPTS_DIR: nonEmpty.optional(),
      MAX_FRAME_BYTES: integer(1024).default(1024 * 1024),
      STATIC_DIR: nonEmpty.optional(),
      SESSION_IDLE_TTL_MS: integer(0).default(30 * 60_000),
      SESSION_UNUSED_TTL_MS: integer(0).default(5_000),
      RESUME_INTERRUPTED_RUNS: boolean.default(true),
      SHUTDOWN_TIMEOUT_MS: integer(1).default(5_000),
      SHUTDOWN_DRAIN_MS: integer(0).default(0),
      LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    }),
    (env) => ({
      port: env.PORT,
      host: env.HOST,
      /** Where the app is reached from outside (PUBLIC_ORIGIN, else HOST and PORT): links in notifications start with it. */
      publicUrl:
        env.PUBLIC_ORIGIN === undefined ? `http://${env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST}:${env.PORT}` : new URL(env.PUBLIC_ORIGIN).origin,
      configFile: env.STEPWISE_CONFIG ?? DEFAULT_CONFIG_FILE,
      /** True when STEPWISE_CONFIG was set: then a missing file is an error, not "no file". */
      configFileExplicit: env.STEPWISE_CONFIG !== undefined,
      /** The prompts folder: one subfolder per strategy (and `chat`), one .md template per purpose. */
      prompts: { dir: env.PROMPTS_DIR ?? defaults.promptsDir },
      transport: { maxFrameBytes: env.MAX_FRAME_BYTES, staticDir: env.STATIC_DIR },
      sessionIdleTtlMs: env.SESSION_IDLE_TTL_MS,
      /** How long a session nobody wrote in stays in memory once its last socket has left (at most sessionIdleTtlMs). */
      sessionUnusedTtlMs: env.SESSION_UNUSED_TTL_MS,
      /** After a restart, runs it interrupted go on from their journal (false: they are closed). */
      resumeInterruptedRuns: env.RESUME_INTERRUPTED_RUNS,
      /** How long a SIGTERM may take to stop runs and close everything before the process exits anyway. */
      shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
      /**
       * How long, after SIGTERM, the server goes on serving with its readiness probe failing before its
       * runs are handed over or stopped, so that a load balancer stops sending it work first.
       */
      shutdownDrainMs: env.SHUTDOWN_DRAIN_MS,
      logLevel: env.LOG_LEVEL,
    }),
  );
